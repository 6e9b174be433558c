package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/cli/internal/settings"
)

// openHost loads the configuration of the state directory with the model
// overrides of the environment (settings.From.ModelEnv) and builds the
// host every turn-running front end shares from its typed values;
// opts.Getenv and opts.Version come from app, and a nil opts.Logger is
// app's.
func openHost(ctx context.Context, app *App, stateDir string, opts host.Options) (*host.Host, error) {
	cfg, err := settings.Load(stateDir, settings.From{Env: app.Env, ModelEnv: true})
	if err != nil {
		return nil, err
	}
	opts.Getenv, opts.Environ, opts.Version = app.Env.Get, app.Env, app.Version
	if opts.Logger == nil {
		opts.Logger = app.Logger
	}
	return host.Open(ctx, cfg.Config, &opts)
}

// currentDir is the directory the command was started in, symlinks
// resolved: the owner's working directory when agent.work_dirs is empty.
func currentDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find the current directory (the working directory when agent.work_dirs is empty): %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(wd); err == nil {
		wd = resolved
	}
	return wd, nil
}
