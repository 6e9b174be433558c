package cli

import (
	"context"
	"fmt"

	"github.com/openprogram/openprogram/cli/internal/doctor"
)

type doctorCmd struct{}

// Run checks the installation and prints one line per check with a fix hint;
// it fails (exit 1) when any check fails.
func (doctorCmd) Run(ctx context.Context, app *App) error {
	checks := doctor.Run(ctx, doctor.Options{Env: app.Env, Version: app.Version, Logger: app.Logger})
	if failed := doctor.Print(app.Stdout, checks); failed > 0 {
		fmt.Fprintf(app.Stderr, "Error: %d check(s) failed; see the fix lines above\n", failed)
		return ExitError(ExitFailure)
	}
	return nil
}
