package console

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/sessions"
)

// Owner is what `chat` and `prompt` share: the owner's line into the
// host's conversation service. Both are views of that line: they show a
// turn's events and, in chat, answer its questions; everything else
// (sessions, the commit point, approvals, audit) is the line's.
type Owner struct {
	svc  *conversation.Service
	line *conversation.Line
}

// NewOwner opens the line of owner, the owner's speaker, on svc. via names
// the command ("chat", "prompt") in the records of the sessions it
// creates. Close it when done.
func NewOwner(svc *conversation.Service, owner authz.Speaker, via string) (*Owner, error) {
	line, err := svc.Open(owner, &conversation.LineOptions{Via: via})
	if err != nil {
		return nil, err
	}
	return &Owner{svc: svc, line: line}, nil
}

// Close closes the line: a turn still running is cancelled.
func (c *Owner) Close() { c.line.Close(conversation.ReasonConnectionClosed) }

// Session loads session id, with a message that says what to do when it
// does not exist.
func (c *Owner) Session(ctx context.Context, id string) (sessions.Session, error) {
	s, err := c.svc.Session(ctx, id)
	if errors.Is(err, conversation.ErrSessionNotFound) {
		return sessions.Session{}, fmt.Errorf("session %q not found; list them with `openprogram sessions list`", id)
	}
	if err != nil {
		return sessions.Session{}, fmt.Errorf("load session %q: %w", id, err)
	}
	return s, nil
}

// turnOutcome is how one turn of the console ended.
type turnOutcome struct {
	reply conversation.Reply
	err   error
}

// send runs one turn saying text in sessionID ("": a new session) on the
// owner's line, in a goroutine of its own, and returns the channel its
// events arrive on, in order, and the one its outcome arrives on once every
// event was sent. The turn waits for the view to take each event (a slow
// terminal slows the turn rather than lose its text), so the view must keep
// reading events until the outcome arrives.
func (c *Owner) send(ctx context.Context, sessionID, text string) (<-chan events.Event, <-chan turnOutcome) {
	evs := make(chan events.Event)
	done := make(chan turnOutcome, 1)
	turn := c.line.NewTurn("cli_turn_"+rand.Text(), sessionID, text)
	go func() {
		reply, err := c.line.Send(ctx, turn, conversation.SendOptions{
			Observe: func(e events.Event) { evs <- e },
		})
		done <- turnOutcome{reply, err}
	}()
	return evs, done
}
