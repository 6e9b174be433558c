package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/cli/internal/settings"
	"github.com/openprogram/openprogram/sessions"
)

// openAppStore loads config.json and opens the configured store for a
// read-only command (host.OpenStore, the one place a store is opened), with
// the audit key if it exists (it is never created here); the caller closes
// the store.
func openAppStore(ctx context.Context, app *App) (*settings.Config, sessions.Store, error) {
	return openAppStoreWith(ctx, app, host.StoreOptions{})
}

// openAppStoreWith is openAppStore with o (its Logger is the app's).
func openAppStoreWith(ctx context.Context, app *App, o host.StoreOptions) (*settings.Config, sessions.Store, error) {
	cfg, dir, err := loadAppConfig(app)
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) && strings.HasPrefix(cfg.StoreURL, "sqlite:") {
		// A read-only command does not install: no state dir means no store yet.
		return nil, nil, fmt.Errorf("no state directory at %s yet: create one with `openprogram mcp token create`", dir)
	}
	o.Logger = app.Logger
	st, err := host.OpenStore(ctx, cfg.StateDir, cfg.StoreURL, &o)
	if err != nil {
		return nil, nil, err
	}
	return cfg, st, nil
}

// readAppStore reads with read from the store of a read-only command
// (openAppStore), closed after; read's error is wrapped with what.
func readAppStore[T any](ctx context.Context, app *App, what string, read func(sessions.Store) (T, error)) (T, error) {
	var zero T
	_, st, err := openAppStore(ctx, app)
	if err != nil {
		return zero, err
	}
	defer st.Close()
	v, err := read(st)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// openStore opens the configured store for a command that writes (mcp
// serve, chat, prompt, mcp token rotate), creating the state dir for the
// embedded default and the audit key if it is missing, and holds it to the
// audit anchor of the state directory (host.OpenStore with Create): a log
// that does not extend the anchor is refused there, for every front end.
func openStore(ctx context.Context, app *App, cfg *settings.Config) (sessions.Store, error) {
	return host.OpenStore(ctx, cfg.StateDir, cfg.StoreURL, &host.StoreOptions{Create: true, Logger: app.Logger})
}
