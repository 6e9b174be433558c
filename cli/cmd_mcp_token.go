package cli

import (
	"errors"
	"fmt"

	"github.com/openprogram/openprogram/tokenauth"
)

type mcpTokenCmd struct {
	Create mcpTokenCreateCmd `cmd:"" help:"Create the MCP server token (once; it is never replaced) and print it."`
}

type mcpTokenCreateCmd struct{}

// Run creates <state>/mcp_server_token. Local only: no network, no server.
func (mcpTokenCreateCmd) Run(app *App) error {
	dir, err := app.StateDir()
	if err != nil {
		fmt.Fprintln(app.Stderr, "Error: could not create MCP server token")
		fmt.Fprintf(app.Stderr, "cause: %s\n", oneLine(err.Error()))
		return ExitError(ExitFailure)
	}
	token, err := tokenauth.Create(tokenauth.Path(dir))
	switch {
	case errors.Is(err, tokenauth.ErrExists):
		fmt.Fprintln(app.Stderr, "Error: MCP server token already exists")
		return ExitError(ExitFailure)
	case err != nil:
		fmt.Fprintln(app.Stderr, "Error: could not create MCP server token")
		fmt.Fprintf(app.Stderr, "cause: %s\n", oneLine(err.Error()))
		return ExitError(ExitFailure)
	}
	if _, err := fmt.Fprintln(app.Stdout, token); err != nil {
		return ExitError(ExitFailure)
	}
	return nil
}
