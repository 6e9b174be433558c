package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/openprogram/openprogram/cli/internal/console"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime/conversation"
)

// maxStdinPrompt bounds a prompt read from stdin.
const maxStdinPrompt = 4 << 20

type promptCmd struct {
	Text    string `arg:"" name:"text" help:"What to say; - reads it from stdin."`
	Session string `name:"session" help:"Continue this session (default: a new one)."`
	JSON    bool   `name:"json" help:"Print the prompt_send payload {session_id,text,assistant_msg_id,failed} as JSON."`
}

// Run answers one prompt as the owner, non-interactively: a tool that needs
// approval is denied at once unless an allow rule covers it. The reply
// streams to stdout without terminal control characters (console.Printable,
// terminal or not), or the payload goes there as exact JSON; tool calls are
// lines on stderr, and a turn with a denied tool ends with a stderr line
// naming them. A failed turn exits 1.
func (c *promptCmd) Run(ctx context.Context, app *App) error {
	text := c.Text
	if text == "-" {
		data, err := io.ReadAll(io.LimitReader(app.Stdin, maxStdinPrompt+1))
		if err != nil {
			return fmt.Errorf("read the prompt from stdin: %w", err)
		}
		if len(data) > maxStdinPrompt {
			return usagef("the prompt on stdin is over %d bytes; shorten it", maxStdinPrompt)
		}
		text = string(data)
	}
	if err := validPrompt(text); err != nil {
		return err
	}
	oc, err := openOwnerConsole(ctx, app, false, "prompt")
	if err != nil {
		return err
	}
	defer oc.Close()

	if c.Session != "" {
		if _, err := oc.session(ctx, c.Session); err != nil {
			return err
		}
	}
	// The reply streams to stdout (not with --json: there stdout is the
	// payload alone) and each tool call is a line on stderr, through the
	// view chat uses, so both sanitise alike.
	v := &turnView{out: app.Stdout, info: app.Stderr, style: console.NewStyle(app.Stderr, app.Env.Get("NO_COLOR"))}
	if c.JSON {
		v.out = io.Discard
	}
	evs, done := oc.send(ctx, c.Session, text)
	out := v.follow(evs, done, nil)
	res, err := out.reply, out.err
	if err != nil {
		v.newline()
		if errors.Is(err, conversation.ErrSessionBusy) {
			return fmt.Errorf("session %s is running another turn; wait for it, or cancel it where it runs", c.Session)
		}
		return fmt.Errorf("run the turn: %w", err)
	}
	if c.JSON {
		payload, err := contracts.EncodePayload(contracts.PromptSendResult{
			SessionID: res.SessionID, Text: res.Text, AssistantMsgID: res.AssistantMessageID, Failed: res.Failed,
		})
		if err != nil {
			return err
		}
		fmt.Fprintln(app.Stdout, payload)
	} else {
		v.newline()
		if res.Failed || !v.streamed {
			fmt.Fprintln(app.Stdout, console.Printable(res.Text))
		}
		if c.Session == "" {
			fmt.Fprintf(app.Stderr, "session %s\n", res.SessionID)
		}
	}
	if len(v.denied) > 0 {
		fmt.Fprintf(app.Stderr, "denied in this turn: %s (the reply may not say so; see openprogram sessions show %s)\n",
			console.Printable(strings.Join(v.denied, ", ")), res.SessionID)
	}
	if res.Failed {
		return ExitError(ExitFailure)
	}
	return nil
}
