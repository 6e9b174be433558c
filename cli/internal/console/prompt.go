package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime/conversation"
)

// PromptOptions are one prompt and where its answer goes.
type PromptOptions struct {
	// Text is the prompt, checked with prompt_send's rule.
	Text string
	// Session continues this session; "" starts a new one.
	Session string
	// JSON prints the prompt_send payload on Stdout instead of the reply.
	JSON bool
	// Stdout gets the reply (or the payload); Stderr the tool lines and
	// notes.
	Stdout, Stderr io.Writer
	// NoColor is $NO_COLOR.
	NoColor string
}

// Prompt answers one prompt on c, non-interactively: the reply streams to
// Stdout without terminal control characters (Printable, terminal or
// not), or the payload goes there as exact JSON; tool calls are lines on
// Stderr, and a turn with a denied tool ends with a Stderr line naming
// them. failed reports a turn that produced no model answer.
func (c *Owner) Prompt(ctx context.Context, o PromptOptions) (failed bool, err error) {
	if o.Session != "" {
		if _, err := c.Session(ctx, o.Session); err != nil {
			return false, err
		}
	}
	// The reply streams to stdout (not with --json: there stdout is the
	// payload alone) and each tool call is a line on stderr, through the
	// view chat uses, so both sanitise alike.
	v := &turnView{out: o.Stdout, info: o.Stderr, style: NewStyle(o.Stderr, o.NoColor)}
	if o.JSON {
		v.out = io.Discard
	}
	evs, done := c.send(ctx, o.Session, o.Text)
	out := v.follow(evs, done, nil)
	res, err := out.reply, out.err
	if err != nil {
		v.newline()
		if errors.Is(err, conversation.ErrSessionBusy) {
			return false, fmt.Errorf("session %s is running another turn; wait for it, or cancel it where it runs", o.Session)
		}
		return false, fmt.Errorf("run the turn: %w", err)
	}
	if o.JSON {
		payload, err := contracts.EncodePayload(contracts.PromptSendResult{
			SessionID: res.SessionID, Text: res.Text, AssistantMsgID: res.AssistantMessageID, Failed: res.Failed,
		})
		if err != nil {
			return false, err
		}
		fmt.Fprintln(o.Stdout, payload)
	} else {
		v.newline()
		if res.Failed || !v.streamed {
			fmt.Fprintln(o.Stdout, Printable(res.Text))
		}
		if o.Session == "" {
			fmt.Fprintf(o.Stderr, "session %s\n", res.SessionID)
		}
	}
	if len(v.denied) > 0 {
		fmt.Fprintf(o.Stderr, "denied in this turn: %s (the reply may not say so; see openprogram sessions show %s)\n",
			Printable(strings.Join(v.denied, ", ")), res.SessionID)
	}
	return res.Failed, nil
}
