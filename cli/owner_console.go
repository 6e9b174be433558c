package cli

import (
	"context"
	"errors"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/cli/internal/console"
	"github.com/openprogram/openprogram/contracts"
)

// ownerConsole is the host and the owner's console over it (chat, prompt).
type ownerConsole struct {
	*console.Owner
	host *host.Host
}

// Close closes the console and the host.
func (c ownerConsole) Close() {
	c.Owner.Close()
	c.host.Close()
}

// openOwner builds the host and opens the owner's console: interactive
// consoles answer approval questions; a non-interactive one has approvals
// denied at once, like MCP. The working directories are config
// agent.work_dirs, or the current directory when that is empty. via names
// the command in the records of the sessions it creates.
func openOwner(ctx context.Context, app *App, interactive bool, via string) (ownerConsole, error) {
	dir, err := app.StateDir()
	if err != nil {
		return ownerConsole{}, err
	}
	wd, wdErr := currentDir()
	h, err := openHost(ctx, app, dir, host.Options{})
	if err != nil {
		return ownerConsole{}, err
	}
	if err := h.ProviderErr(); err != nil {
		app.Logger.Debug("no model provider: turns will complete with failed:true", "why", err.Error())
	}
	sp, err := h.Owner(host.OwnerOptions{Interactive: interactive, WorkDir: wd})
	if err != nil {
		h.Close()
		if wdErr != nil {
			return ownerConsole{}, wdErr
		}
		return ownerConsole{}, err
	}
	owner, err := console.NewOwner(h.Conversations(), sp, via)
	if err != nil {
		h.Close()
		return ownerConsole{}, err
	}
	return ownerConsole{Owner: owner, host: h}, nil
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
