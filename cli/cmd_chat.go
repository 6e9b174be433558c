package cli

import (
	"context"
	"os"
	"os/signal"

	"github.com/openprogram/openprogram/cli/internal/console"
)

type chatCmd struct {
	Session string `name:"session" help:"Continue this session (default: a new one, made by your first message)."`
}

// Run talks with the owner until /exit, Ctrl-D or Ctrl-C at an empty
// prompt. Ctrl-C while a turn runs cancels that turn only.
func (c *chatCmd) Run(ctx context.Context, app *App) error {
	// Ctrl-C belongs to the conversation from here on: it cancels a turn
	// rather than the process (SIGTERM still ends it through ctx).
	signal.Reset(os.Interrupt)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)

	owner, err := openOwner(ctx, app, true, "chat")
	if err != nil {
		return err
	}
	defer owner.Close()
	return owner.Chat(ctx, console.ChatOptions{Session: c.Session, In: app.Stdin, Out: app.Stdout, Interrupts: sigs, NoColor: app.Env.Get("NO_COLOR")})
}
