package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/anthropic"
	"github.com/openprogram/openprogram/tokenauth"
)

// maxHeaders bounds model.headers.
const maxHeaders = 32

// maxTimeout bounds model.timeout and model.turn_timeout.
const maxTimeout = 24 * time.Hour

func validateKeyEnv(v any) error {
	if err := validateEnvName(v); err != nil {
		return err
	}
	if v == tokenauth.EnvVar {
		return fmt.Errorf("%s holds the MCP server token, which is never sent to a model endpoint: name the variable that holds the model's API key", tokenauth.EnvVar)
	}
	return nil
}

func number(v any) (float64, error) {
	if v == nil {
		return 0, errors.New("unset")
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("want a number, got %s", jsonKind(v))
	}
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%s is not a number", n)
	}
	return f, nil
}

// validateNumber accepts null or a number that check accepts.
func validateNumber(check func(f float64, v any) error) func(any) error {
	return func(v any) error {
		if v == nil {
			return nil
		}
		f, err := number(v)
		if err != nil {
			return err
		}
		return check(f, v)
	}
}

// validateFloat accepts null or a number in [lo, hi] ((lo, hi] when
// !loIncluded).
func validateFloat(lo, hi float64, loIncluded bool) func(any) error {
	return validateNumber(func(f float64, _ any) error {
		switch {
		case f <= hi && f > lo, f == lo && loIncluded:
			return nil
		case loIncluded:
			return fmt.Errorf("%v is outside %v to %v", f, lo, hi)
		}
		return fmt.Errorf("%v is not above %v and at most %v", f, lo, hi)
	})
}

// validateInt accepts null or an integer in [lo, hi].
func validateInt(lo, hi int) func(any) error {
	return validateNumber(func(f float64, v any) error {
		if f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
			return fmt.Errorf("want a whole number from %d to %d, got %v", lo, hi, v)
		}
		return nil
	})
}

func validateDuration(v any) error {
	if v == nil {
		return nil
	}
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf(`want a duration such as "90s" or "5m", got %s`, jsonKind(v))
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxTimeout {
		return fmt.Errorf(`%q is not a duration from 1ms to 24h such as "90s" or "5m"`, s)
	}
	return nil
}

func validateHeaders(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf(`want a JSON object of strings such as '{"X-Title":"OpenProgram"}', got %s`, jsonKind(v))
	}
	if len(m) > maxHeaders {
		return fmt.Errorf("%d headers, at most %d", len(m), maxHeaders)
	}
	for name, val := range m {
		s, ok := val.(string)
		if !ok {
			return fmt.Errorf("header %s: want a string, got %s", name, jsonKind(val))
		}
		// CheckHeader also refuses ${OPENPROGRAM_MCP_TOKEN}.
		if err := provider.CheckHeader(name, s); err != nil {
			return err
		}
	}
	return nil
}

// float returns a number setting, nil when unset.
func (c *Config) float(key string) *float64 {
	v, _, _ := c.Get(key)
	f, err := number(v)
	if err != nil {
		return nil
	}
	return &f
}

// integer returns a whole-number setting, 0 when unset.
func (c *Config) integer(key string) int {
	if f := c.float(key); f != nil {
		return int(*f)
	}
	return 0
}

// duration returns a duration setting, 0 when unset.
func (c *Config) duration(key string) time.Duration {
	d, _ := time.ParseDuration(c.String(key))
	return d
}

// stringMap returns an object-of-strings setting.
func (c *Config) stringMap(key string) map[string]string {
	v, _, _ := c.Get(key)
	m, _ := v.(map[string]any)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		if s, ok := e.(string); ok {
			out[k] = s
		}
	}
	return out
}

// providerConfig maps config.json's model.* keys onto the runtime's provider
// configuration; version goes into the User-Agent.
func providerConfig(cfg *Config) provider.Config {
	return provider.Config{
		Provider:  cfg.String("model.provider"),
		Model:     cfg.String("model.name"),
		BaseURL:   cfg.String("model.base_url"),
		APIKeyEnv: cfg.String("model.api_key_env"),
		Script:    cfg.String("model.script"),
		Settings: provider.Settings{
			Temperature:     cfg.float("model.temperature"),
			TopP:            cfg.float("model.top_p"),
			MaxOutputTokens: cfg.integer("model.max_output_tokens"),
			Timeout:         cfg.duration("model.timeout"),
			Headers:         cfg.stringMap("model.headers"),
		},
	}
}

// modelEnvOverrides is the one list of settings an environment variable
// replaces, for the commands that run turns (mcp serve, chat, prompt,
// doctor): an MCP bundle passes what the user typed into Claude Desktop this
// way, since its server has no config.json of its own to edit. An empty
// value counts as unset; config get, set and list show config.json alone.
var modelEnvOverrides = []struct{ env, key string }{
	{"OPENPROGRAM_MODEL_PROVIDER", "model.provider"},
	{"OPENPROGRAM_MODEL_NAME", "model.name"},
	{"OPENPROGRAM_MODEL_BASE_URL", "model.base_url"},
}

// loadRunConfig is LoadConfig with modelEnvOverrides applied from env, each
// value checked by its key's validator: what the commands that run turns use.
func loadRunConfig(env Env, stateDir string) (*Config, error) {
	cfg, err := LoadConfig(stateDir)
	if err != nil {
		return nil, err
	}
	for _, o := range modelEnvOverrides {
		v := env.Get(o.env)
		if v == "" {
			continue
		}
		if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") {
			return nil, fmt.Errorf("%s is %q, a placeholder the MCP client did not fill in: set it, or leave it empty to use %s of config.json", o.env, v, o.key)
		}
		if err := cfg.set(o.key, v); err != nil {
			return nil, fmt.Errorf("%s: %w (unset it to use config.json's %s)", o.env, err, o.key)
		}
	}
	return cfg, nil
}

// modelProvider builds the model provider exactly as `mcp serve` does, from
// config.json and the environment (API key, ${NAME} in model.headers), with
// this build's version in the User-Agent. A configuration that cannot work
// is a *runtime.ConfigError naming the keys to set.
func modelProvider(app *App, cfg *Config) (provider.Provider, error) {
	pc := providerConfig(cfg)
	pc.Version = app.Version
	return runtime.NewProvider(pc, app.Env.Get)
}

// checkModelSettings refuses a combination of settings the configured
// provider cannot honour, saying why (`config set` runs it before saving).
func checkModelSettings(cfg *Config) error {
	pc := providerConfig(cfg)
	if pc.Provider == runtime.ProviderAnthropic {
		if err := anthropic.Unsupported(pc.Settings); err != nil {
			return err
		}
	}
	return nil
}

// checkScript refuses a model.script value the scripted provider could not
// replay: a relative path (mcp serve runs in whatever directory its client
// starts it in), or a file that is missing, unreadable or not a script. It
// loads the file exactly as the provider will. An empty value unsets.
func checkScript(v any) error {
	s, _ := v.(string)
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if u, err := url.Parse(s); (err != nil || u.Scheme != "file") && !filepath.IsAbs(s) {
		return fmt.Errorf("%q is not an absolute path; give the script file's full path", s)
	}
	_, err := runtime.NewProvider(provider.Config{Provider: runtime.ProviderScripted, Script: s}, func(string) string { return "" })
	var ce *runtime.ConfigError
	if errors.As(err, &ce) {
		return errors.New(ce.Msg)
	}
	return err
}
