package cli

import (
	"context"
	"fmt"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/internal/grammar"
	"github.com/openprogram/openprogram/tokenauth"
)

// manCmd prints the manual page. It is hidden: `make dist` runs it to put
// openprogram.1 into the release archive, and nobody needs it at a prompt.
type manCmd struct{}

// Run prints openprogram(1) in roff, generated from the command grammar (as
// the completion scripts are) so that it never drifts from the commands.
func (manCmd) Run(ctx context.Context, app *App) error {
	var cmd root
	parser, err := newParser(ctx, app, &cmd)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(app.Stdout, grammar.ManPage(parser.Model.Node, grammar.Page{
		Version: app.Version, Date: app.Date,
		Environment: []grammar.Entry{
			{Name: EnvHome, Text: "The state directory (default ~/.openprogram)."},
			{Name: EnvProfile, Text: "Use ~/.openprogram-NAME as the state directory."},
			{Name: tokenauth.EnvVar, Text: "The MCP token mcp serve compares with the token file before it reads stdin."},
			{Name: EnvDatabaseURL, Text: "The store URL; replaces store.url of config.json."},
			{Name: "OPENPROGRAM_LOG_LEVEL, OPENPROGRAM_LOG_FORMAT", Text: "The defaults of mcp serve's --log-level and --log-format."},
		},
		Files: []grammar.Entry{
			{Name: tokenauth.FileName, Text: "the MCP token (mode 0600); mcp serve compares " + tokenauth.EnvVar + " with it"},
			{Name: ConfigFileName, Text: "the settings config get, set, unset and list read and change"},
			{Name: DatabaseFileName, Text: "the SQLite store: sessions, memory, audit log"},
			{Name: tokenauth.KeyFileName, Text: "the audit chain's key; keep its backup apart from the database's"},
			{Name: tokenauth.AnchorFileName, Text: "the last audit head this install saw; a log that does not extend it is refused (audit reanchor --yes after a deliberate restore)"},
			{Name: authz.OwnerFileName, Text: "the install's owner principal"},
			{Name: TaskLogFileName, Text: "the log of the detached runners of durable MCP tasks (mode 0600)"},
		},
	}))
	return err
}
