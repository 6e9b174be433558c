package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/openprogram/openprogram/cli/internal/clients"
	"github.com/openprogram/openprogram/cli/internal/console"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

type mcpTokenCmd struct {
	Create mcpTokenCreateCmd `cmd:"" help:"Create the MCP server token (once; it is never replaced) and print it."`
	Path   mcpTokenPathCmd   `cmd:"" help:"Print the path of the MCP server token file."`
	Rotate mcpTokenRotateCmd `cmd:"" help:"Replace the MCP server token with a new one and print it (every configured client must then be updated)."`
}

type mcpTokenCreateCmd struct{}

// Run creates <state>/mcp_server_token. Local only: no network, no server.
func (mcpTokenCreateCmd) Run(app *App) error {
	dir, err := app.StateDir()
	if err != nil {
		fmt.Fprintln(app.Stderr, "Error: could not create MCP server token")
		fmt.Fprintf(app.Stderr, "cause: %s\n", console.OneLine(err.Error()))
		return ExitError(ExitFailure)
	}
	path := tokenauth.Path(dir)
	token, err := tokenauth.Create(path)
	switch {
	case errors.Is(err, tokenauth.ErrExists):
		fmt.Fprintf(app.Stderr, "Error: MCP server token already exists: %s (to replace it: openprogram mcp token rotate)\n", path)
		return ExitError(ExitFailure)
	case err != nil:
		fmt.Fprintln(app.Stderr, "Error: could not create MCP server token")
		fmt.Fprintf(app.Stderr, "cause: %s\n", console.OneLine(err.Error()))
		return ExitError(ExitFailure)
	}
	if _, err := fmt.Fprintln(app.Stdout, token); err != nil {
		return ExitError(ExitFailure)
	}
	return nil
}

type mcpTokenPathCmd struct{}

// Run prints the token file's path; it does not look at the file.
func (mcpTokenPathCmd) Run(app *App) error {
	dir, err := app.StateDir()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(app.Stdout, tokenauth.Path(dir))
	return err
}

type mcpTokenRotateCmd struct {
	Yes bool `name:"yes" short:"y" help:"Replace the token without asking."`
}

// auditTokenRotated is the audit record of a token rotation.
const auditTokenRotated = sessions.AuditTokenRotated

// tokenRotatedPayload is its payload: client identities, never the token.
type tokenRotatedPayload struct {
	OldClientID string `json:"old_client_id"`
	NewClientID string `json:"new_client_id"`
}

// Run replaces the token after an explicit confirmation and after its
// audit record, prints the new token once and says which clients to update.
func (c *mcpTokenRotateCmd) Run(ctx context.Context, app *App) error {
	if !c.Yes && !console.IsTerminal(app.Stdin) {
		return usagef("this replaces the token and needs a confirmation: run it in a terminal or pass --yes")
	}
	cfg, dir, err := loadAppConfig(app)
	if err != nil {
		return err
	}
	path := tokenauth.Path(dir)
	old, err := tokenauth.Read(path)
	if err != nil {
		return fmt.Errorf("no valid token to rotate (%w); run `openprogram mcp token create` for a first one", err)
	}
	oldID := tokenauth.Fingerprint(old)
	if !c.Yes {
		ok, err := confirm(app, "Replace the MCP server token at "+path+"? Every client configured with it stops working until updated. [y/N] ")
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(app.Stderr, "the token was not changed")
			return ExitError(ExitFailure)
		}
	}
	// The store opens first: a rotation is never left unaudited because the
	// store was unreachable.
	st, err := openStore(ctx, app, cfg)
	if err != nil {
		return fmt.Errorf("open the store for the audit record: %w; the token was not changed", err)
	}
	defer st.Close()
	// The record comes first: no rotation happens without its record. A
	// rotation that then fails leaves a record of one that was attempted,
	// and says so.
	token, err := tokenauth.NewToken()
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	payload := tokenRotatedPayload{OldClientID: oldID, NewClientID: tokenauth.Fingerprint(token)}
	if _, err := sessions.AppendAuditPayload(actx, st, auditTokenRotated, "cli", "", payload); err != nil {
		return fmt.Errorf("record the rotation in the audit log: %w; the token was not changed", err)
	}
	if err := tokenauth.RotateTo(path, token); err != nil {
		return fmt.Errorf("%w; the audit log's mcp.token.rotated record names a rotation that did not happen, and the old token still works", err)
	}
	if _, err := fmt.Fprintln(app.Stdout, token); err != nil {
		return err
	}
	fmt.Fprintln(app.Stderr, "the old token no longer works; update every client that uses it:")
	for _, client := range clients.Installed(app.Env) {
		// A file that holds the token: offer to write the new one where
		// someone can answer; otherwise say the exact command.
		if clients.HoldsToken(client) && !c.Yes && console.IsTerminal(app.Stdin) {
			ok, err := confirm(app, "Write the new token into "+clients.Title(client)+"'s configuration now? [y/N] ")
			if err == nil && ok {
				install := mcpInstallCmd{clientTarget{Client: client, Scope: "user"}}
				if err := install.Run(ctx, app); err != nil {
					return fmt.Errorf("the token was rotated but updating %s failed: %w; run: openprogram mcp install --client %s", clients.Title(client), err, client)
				}
				continue
			}
		}
		fmt.Fprintln(app.Stderr, "  "+clients.RotateAdvice(client, path))
	}
	fmt.Fprintf(app.Stderr, "  any other client (Claude Code, project configurations): set %s to the new token\n", tokenauth.EnvVar)
	return nil
}

// confirm asks question on stderr and reads a yes from stdin (a terminal).
func confirm(app *App, question string) (bool, error) {
	fmt.Fprint(app.Stderr, question)
	line, err := bufio.NewReader(io.LimitReader(app.Stdin, 64)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("read the answer: %w", err)
	}
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes", nil
}
