package cli

import (
	"context"
	"fmt"

	"github.com/openprogram/openprogram/cli/internal/grammar"
)

type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish,powershell" help:"The shell: ${enum}."`
}

// Run prints a completion script for the shell, generated from the command
// grammar itself so it never drifts from it.
func (c *completionCmd) Run(ctx context.Context, app *App) error {
	var cmd root
	parser, err := newParser(ctx, app, &cmd)
	if err != nil {
		return err
	}
	script, err := grammar.Completion(c.Shell, parser.Model.Node)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(app.Stdout, script)
	return err
}
