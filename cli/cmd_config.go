package cli

import (
	"errors"
	"fmt"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/cli/internal/settings"
)

type configCmd struct {
	Get   configGetCmd   `cmd:"" help:"Print a setting (its default when unset)."`
	Set   configSetCmd   `cmd:"" help:"Change a setting. VALUE is parsed as JSON when it is valid JSON, else taken as a string."`
	Unset configUnsetCmd `cmd:"" help:"Remove a setting so it reads as its default."`
	List  configListCmd  `cmd:"" help:"Print every setting with its value and what it is for."`
}

type configGetCmd struct {
	Key         string `arg:"" complete:"config-keys" help:"Dotted key, e.g. mcp_server.exposed_tools."`
	Raw         bool   `name:"raw" help:"Print a string value as it is, without JSON quotes (lists and objects stay JSON)."`
	ShowSecrets bool   `name:"show-secrets" help:"Show secrets (the store URL's password, header values) instead of hiding them."`
}

func (c *configGetCmd) Run(app *App) error {
	cfg, _, err := loadForKey(app, c.Key)
	if err != nil {
		return err
	}
	text, err := cfg.Text(c.Key, c.Raw, c.ShowSecrets)
	if err != nil {
		return configUsage(err)
	}
	_, err = fmt.Fprintln(app.Stdout, text)
	return err
}

type configSetCmd struct {
	Key   string `arg:"" complete:"config-keys" help:"Dotted key, e.g. mcp_server.exposed_tools."`
	Value string `arg:"" help:"The value: JSON, or a plain string."`
}

// Run loads the configuration through the one loader, applies the key
// with its own parser, checks the whole, and writes config.json
// atomically; on any refusal the file is left as it was.
func (c *configSetCmd) Run(app *App) error {
	cfg, dir, err := loadForKey(app, c.Key)
	if err != nil {
		return err
	}
	if err := cfg.SetText(c.Key, c.Value); err != nil {
		return configUsage(err)
	}
	if err := host.EnsureStateDir(dir); err != nil {
		return err
	}
	return cfg.Save(dir)
}

type configUnsetCmd struct {
	Key string `arg:"" complete:"config-keys" help:"Dotted key."`
}

func (c *configUnsetCmd) Run(app *App) error {
	cfg, dir, err := loadForKey(app, c.Key)
	if err != nil {
		return err
	}
	if changed, err := cfg.Unset(c.Key); err != nil || !changed {
		return configUsage(err)
	}
	return cfg.Save(dir)
}

type configListCmd struct {
	ShowSecrets bool `name:"show-secrets" help:"Show secrets (the store URL's password, header values) instead of hiding them."`
}

func (c configListCmd) Run(app *App) error {
	cfg, _, err := loadAppConfig(app)
	if err != nil {
		return err
	}
	return cfg.List(app.Stdout, c.ShowSecrets)
}

// configUsage makes an unknown key, or a value config set or unset
// refuses, a usage error (exit 2).
func configUsage(err error) error {
	var unknown *settings.UnknownKeyError
	var refused *settings.RefusedError
	if errors.As(err, &unknown) || errors.As(err, &refused) {
		return usageError{err.Error()}
	}
	return err
}

// loadForKey is the start of the commands on one key (get, set, unset): an
// unknown key is refused before the configuration is loaded.
func loadForKey(app *App, name string) (*settings.Config, string, error) {
	if _, ok := settings.LookupKey(name); !ok {
		return nil, "", configUsage(&settings.UnknownKeyError{Name: name})
	}
	return loadAppConfig(app)
}

// loadAppConfig resolves the state directory and loads the configuration
// from it and the environment (the store URL; not the model overrides,
// which only the commands that run turns read: openHost).
func loadAppConfig(app *App) (*settings.Config, string, error) {
	dir, err := app.StateDir()
	if err != nil {
		return nil, "", err
	}
	cfg, err := settings.Load(dir, settings.From{Env: app.Env})
	if err != nil {
		return nil, "", err
	}
	return cfg, dir, nil
}
