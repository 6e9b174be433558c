package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"slices"
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

func parseKeyEnv(v any) (string, error) {
	s, err := parseEnvName(v)
	if err != nil {
		return "", err
	}
	if s == tokenauth.EnvVar {
		return "", fmt.Errorf("%s holds the MCP server token, which is never sent to a model endpoint: name the variable that holds the model's API key", tokenauth.EnvVar)
	}
	return s, nil
}

func number(v any) (float64, error) {
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

// parseFloat accepts null (nil: the server's default) or a number in
// [lo, hi] ((lo, hi] when !loIncluded).
func parseFloat(lo, hi float64, loIncluded bool) func(any) (*float64, error) {
	return func(v any) (*float64, error) {
		if v == nil {
			return nil, nil
		}
		f, err := number(v)
		switch {
		case err != nil:
			return nil, err
		case f <= hi && f > lo, f == lo && loIncluded:
			return &f, nil
		case loIncluded:
			return nil, fmt.Errorf("%v is outside %v to %v", f, lo, hi)
		}
		return nil, fmt.Errorf("%v is not above %v and at most %v", f, lo, hi)
	}
}

// parseInt accepts null (0) or a whole number in [lo, hi].
func parseInt(lo, hi int) func(any) (int, error) {
	return func(v any) (int, error) {
		if v == nil {
			return 0, nil
		}
		f, err := number(v)
		if err != nil {
			return 0, err
		}
		if f != math.Trunc(f) || f < float64(lo) || f > float64(hi) {
			return 0, fmt.Errorf("want a whole number from %d to %d, got %v", lo, hi, v)
		}
		return int(f), nil
	}
}

// parseDuration accepts null (0) or a duration from 1ms to 24h.
func parseDuration(v any) (time.Duration, error) {
	if v == nil {
		return 0, nil
	}
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf(`want a duration such as "90s" or "5m", got %s`, jsonKind(v))
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > maxTimeout {
		return 0, fmt.Errorf(`%q is not a duration from 1ms to 24h such as "90s" or "5m"`, s)
	}
	return d, nil
}

// parseHeaders accepts a JSON object of at most maxHeaders header values
// (nil when empty); provider.CheckHeader checks each.
func parseHeaders(v any) (map[string]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf(`want a JSON object of strings such as '{"X-Title":"OpenProgram"}', got %s`, jsonKind(v))
	}
	if len(m) > maxHeaders {
		return nil, fmt.Errorf("%d headers, at most %d", len(m), maxHeaders)
	}
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(m))
	for name, val := range m {
		s, ok := val.(string)
		if !ok {
			return nil, fmt.Errorf("header %s: want a string, got %s", name, jsonKind(val))
		}
		// CheckHeader also refuses ${OPENPROGRAM_MCP_TOKEN}.
		if err := provider.CheckHeader(name, s); err != nil {
			return nil, err
		}
		out[name] = s
	}
	return out, nil
}

// EnvOverride is an environment variable that replaces a key of
// config.json for the commands that run turns.
type EnvOverride struct {
	// Env is the variable, Key the key it replaces.
	Env, Key string
}

// modelEnvOverrides is the one list of settings an environment variable
// replaces, for the commands that run turns (mcp serve, chat, prompt,
// doctor): an MCP bundle passes what the user typed into Claude Desktop this
// way, since its server has no config.json of its own to edit. An empty
// value counts as unset; config get, set and list show config.json alone.
// The opt-in model.allow_unencrypted_key is granted by "true" and left as
// config.json has it by "false" (a bundle's box left clear grants nothing
// and revokes nothing).
var modelEnvOverrides = []EnvOverride{
	{"OPENPROGRAM_MODEL_PROVIDER", "model.provider"},
	{"OPENPROGRAM_MODEL_NAME", "model.name"},
	{"OPENPROGRAM_MODEL_BASE_URL", "model.base_url"},
	{"OPENPROGRAM_MODEL_ALLOW_UNENCRYPTED_KEY", "model.allow_unencrypted_key"},
}

// ModelEnvOverrides returns the variables that replace keys of config.json
// when [From] has ModelEnv, in the order they are applied.
func ModelEnvOverrides() []EnvOverride { return slices.Clone(modelEnvOverrides) }

// Provider builds the model provider exactly as `mcp serve` does, from the
// configuration and the environment getenv reads (API key, ${NAME} in
// model.headers), with version in the User-Agent. A configuration that
// cannot work is a *runtime.ConfigError naming the keys to set.
func (c *Config) Provider(version string, getenv func(string) string) (provider.Provider, error) {
	pc := c.Model
	pc.Version = version
	return runtime.NewProvider(pc, getenv)
}

// checkModel refuses a combination of settings the configured provider
// cannot honour, saying why (`config set` runs it on the whole
// configuration before saving).
func (c *Config) checkModel() error {
	if c.Model.Provider == runtime.ProviderAnthropic {
		return anthropic.Unsupported(c.Model.Settings)
	}
	return nil
}

// checkScript refuses a model.script value the scripted provider could not
// replay: a relative path (mcp serve runs in whatever directory its client
// starts it in), or a file that is missing, unreadable or not a script. It
// loads the file exactly as the provider will. An empty value unsets.
func checkScript(s string) error {
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
