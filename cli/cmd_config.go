package cli

import (
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
	_, cfg, _, err := loadForKey(app, c.Key)
	if err != nil {
		return err
	}
	v, _, err := cfg.Get(c.Key)
	if err != nil {
		return err
	}
	if !c.ShowSecrets {
		v = settings.Redact(c.Key, v)
	}
	if s, ok := v.(string); ok && c.Raw {
		_, err = fmt.Fprintln(app.Stdout, s)
		return err
	}
	_, err = fmt.Fprintln(app.Stdout, settings.Encode(v))
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
	k, cfg, dir, err := loadForKey(app, c.Key)
	if err != nil {
		return err
	}
	v, err := k.ParseValue(c.Value)
	if err != nil {
		return usagef("invalid value for %s: %v; config.json was not changed", c.Key, err)
	}
	// The key was looked up above, so set can only refuse the value, and
	// says so with "invalid value for <key>: ".
	if err := cfg.Set(c.Key, v); err != nil {
		return usagef("%v; config.json was not changed", err)
	}
	if err := cfg.CheckModel(); err != nil {
		return usagef("%s cannot be set: %v; config.json was not changed", c.Key, err)
	}
	if err := cfg.CheckAcrossKeys(); err != nil {
		return usagef("%s cannot be set: %v; config.json was not changed", c.Key, err)
	}
	// Checked when set, not when loaded: a file that goes away later is
	// reported by doctor and by the prompt that needs it.
	if c.Key == "model.script" {
		if err := settings.CheckScript(cfg.Model.Script); err != nil {
			return usagef("invalid value for model.script: %v; config.json was not changed", err)
		}
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
	_, cfg, dir, err := loadForKey(app, c.Key)
	if err != nil {
		return err
	}
	if _, set, _ := cfg.Get(c.Key); !set {
		return nil
	}
	if err := cfg.Unset(c.Key); err != nil {
		return err
	}
	if err := cfg.CheckAcrossKeys(); err != nil {
		return usagef("%s cannot be unset: %v; config.json was not changed", c.Key, err)
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
	for _, k := range settings.Keys() {
		v, set, _ := cfg.Get(k.Name)
		if !c.ShowSecrets {
			v = settings.Redact(k.Name, v)
		}
		origin := "default"
		if set {
			origin = "set"
		}
		if _, err := fmt.Fprintf(app.Stdout, "%s = %s (%s)\n    %s\n", k.Name, settings.Encode(v), origin, k.Help); err != nil {
			return err
		}
	}
	return nil
}

// loadForKey is the start of the commands on one key (get, set, unset): an
// unknown key is refused before the configuration is loaded.
func loadForKey(app *App, name string) (settings.Key, *settings.Config, string, error) {
	k, ok := settings.LookupKey(name)
	if !ok {
		return settings.Key{}, nil, "", usagef("%v", &settings.UnknownKeyError{Name: name})
	}
	cfg, dir, err := loadAppConfig(app)
	return k, cfg, dir, err
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
