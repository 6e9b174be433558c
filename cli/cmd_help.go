package cli

import (
	"context"
	"strings"
)

type helpCmd struct {
	Command []string `arg:"" optional:"" help:"The command to show help for."`
}

// Run prints the help of the named command (or of openprogram) on stdout.
func (c *helpCmd) Run(ctx context.Context, app *App) error {
	var cmd root
	parser, err := newParser(ctx, app, &cmd)
	if err != nil {
		return err
	}
	_, err = parser.Parse(append(append([]string{}, c.Command...), "--help"))
	if err != nil {
		return usagef("no such command: %s", strings.Join(c.Command, " "))
	}
	return nil
}
