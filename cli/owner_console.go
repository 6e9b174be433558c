package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/sessions"
)

// ownerConsole is what `chat` and `prompt` share: the host and the owner's
// line into its conversation service. Both are views of that line: they
// show a turn's events and, in chat, answer its questions; everything else
// (sessions, the commit point, approvals, audit) is the line's.
type ownerConsole struct {
	host *host.Host
	line *conversation.Line
}

// openOwnerConsole builds the host and opens the owner's line: interactive
// consoles answer approval questions; a non-interactive one has approvals
// denied at once, like MCP. The working directories are config
// agent.work_dirs, or the current directory when that is empty. via names
// the command in the records of the sessions it creates.
func openOwnerConsole(ctx context.Context, app *App, interactive bool, via string) (*ownerConsole, error) {
	dir, err := app.StateDir()
	if err != nil {
		return nil, err
	}
	wd, wdErr := currentDir()
	h, err := openHost(ctx, app, dir, host.Options{})
	if err != nil {
		return nil, err
	}
	if err := h.ProviderErr(); err != nil {
		app.Logger.Debug("no model provider: turns will complete with failed:true", "why", err.Error())
	}
	owner, err := h.Owner(host.OwnerOptions{Interactive: interactive, WorkDir: wd})
	if err != nil {
		h.Close()
		if wdErr != nil {
			return nil, wdErr
		}
		return nil, err
	}
	line, err := h.Conversations().Open(owner, &conversation.LineOptions{Via: via})
	if err != nil {
		h.Close()
		return nil, err
	}
	return &ownerConsole{host: h, line: line}, nil
}

func (c *ownerConsole) Close() {
	c.line.Close(conversation.ReasonConnectionClosed)
	c.host.Close()
}

// session loads session id, with a message that says what to do when it
// does not exist.
func (c *ownerConsole) session(ctx context.Context, id string) (sessions.Session, error) {
	s, err := c.host.Conversations().Session(ctx, id)
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
func (c *ownerConsole) send(ctx context.Context, sessionID, text string) (<-chan events.Event, <-chan turnOutcome) {
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

// validPrompt refuses what prompt_send refuses: the rule is contracts'
// (prompt_send's frozen schema and its U+0000 check), said the console's way.
func validPrompt(text string) error {
	switch err := contracts.CheckPrompt(text); {
	case errors.Is(err, contracts.ErrNULPrompt):
		return usagef("the prompt holds a NUL character (U+0000); remove it")
	case err != nil:
		return usagef("the prompt is blank; say something, or pass - to read it from stdin")
	}
	return nil
}
