package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/openprogram/openprogram/cli/internal/console"
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
	owner, err := openOwner(ctx, app, false, "prompt")
	if err != nil {
		return err
	}
	defer owner.Close()
	failed, err := owner.Prompt(ctx, console.PromptOptions{
		Text: text, Session: c.Session, JSON: c.JSON, Stdout: app.Stdout, Stderr: app.Stderr, NoColor: app.Env.Get("NO_COLOR"),
	})
	if err != nil {
		return err
	}
	if failed {
		return ExitError(ExitFailure)
	}
	return nil
}
