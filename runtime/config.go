package runtime

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/anthropic"
	"github.com/openprogram/openprogram/runtime/provider/openai"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
)

// Provider names accepted in model.provider.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderScripted  = "scripted"
)

// ConfigError reports a model configuration that cannot give a provider.
// Keys names the config.json keys (or environment variables) to set, and the
// message says how; it never contains an API key.
type ConfigError struct {
	Keys []string
	Msg  string
}

func (e *ConfigError) Error() string { return "model provider not configured: " + e.Msg }

// NewProvider builds the provider cfg describes (model.provider,
// model.name, model.base_url, model.api_key_env, model.script), reading the API key from
// the environment through getenv. Network providers come wrapped in
// [provider.WithRetry] with [provider.DefaultRetryPolicy]; the scripted one
// does not (its script decides what fails). A configuration that cannot work
// is a [*ConfigError] saying exactly which keys to set.
//
//   - openai: model.name required; the key is read from the variable named by
//     model.api_key_env (default OPENAI_API_KEY) and may be absent only when
//     model.base_url is a loopback address (a local Ollama, vLLM, llama.cpp
//     or LM Studio).
//   - anthropic: model.name required; the key from model.api_key_env
//     (default ANTHROPIC_API_KEY).
//   - scripted: model.script is the script file (a path or a file:// URL).
func NewProvider(cfg provider.Config, getenv func(string) string) (provider.Provider, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	name := strings.ToLower(strings.TrimSpace(cfg.Provider))
	switch name {
	case "":
		return nil, &ConfigError{Keys: []string{"model.provider", "model.name"}, Msg: "model.provider is not set: run " +
			"`openprogram config set model.provider openai` and `openprogram config set model.name <model>` " +
			"(key in $OPENAI_API_KEY; for a local server also `openprogram config set model.base_url http://127.0.0.1:11434/v1`), " +
			"or use model.provider anthropic (key in $ANTHROPIC_API_KEY), " +
			"or model.provider scripted with model.script set to a script file"}
	case ProviderOpenAI:
		return newOpenAI(cfg, getenv)
	case ProviderAnthropic:
		return newAnthropic(cfg, getenv)
	case ProviderScripted:
		return newScripted(cfg)
	}
	return nil, &ConfigError{Keys: []string{"model.provider"}, Msg: fmt.Sprintf(
		"model.provider %q is not one of openai, anthropic, scripted: run `openprogram config set model.provider openai`", cfg.Provider)}
}

func missingModel(p string) *ConfigError {
	return &ConfigError{Keys: []string{"model.name"}, Msg: fmt.Sprintf(
		"model.name is not set for the %s provider: run `openprogram config set model.name <model>`", p)}
}

func keyEnv(cfg provider.Config, def string) (string, error) {
	env := strings.TrimSpace(cfg.APIKeyEnv)
	if env == "" {
		return def, nil
	}
	for _, r := range env {
		if !(r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9')) {
			return "", &ConfigError{Keys: []string{"model.api_key_env"}, Msg: fmt.Sprintf(
				"model.api_key_env must name an environment variable (letters, digits, _), not hold the key: run `openprogram config set model.api_key_env %s`", def)}
		}
	}
	return env, nil
}

func newOpenAI(cfg provider.Config, getenv func(string) string) (provider.Provider, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, missingModel(ProviderOpenAI)
	}
	env, err := keyEnv(cfg, openai.DefaultKeyEnv)
	if err != nil {
		return nil, err
	}
	key := strings.TrimSpace(getenv(env))
	if key == "" && openai.KeyRequired(cfg.BaseURL) {
		where := "the OpenAI API"
		if cfg.BaseURL != "" {
			where = cfg.BaseURL
		}
		return nil, &ConfigError{Keys: []string{"model.api_key_env", env}, Msg: fmt.Sprintf(
			"the openai provider needs an API key for %s: export %s=<key> before starting openprogram "+
				"(or name another variable with `openprogram config set model.api_key_env NAME`); "+
				"a local server on a loopback model.base_url needs no key", where, env)}
	}
	p, err := openai.New(openai.Options{Model: cfg.Model, BaseURL: cfg.BaseURL, APIKey: key})
	if err != nil {
		return nil, &ConfigError{Keys: []string{"model.base_url"}, Msg: err.Error()}
	}
	return provider.WithRetry(p, provider.DefaultRetryPolicy()), nil
}

func newAnthropic(cfg provider.Config, getenv func(string) string) (provider.Provider, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, missingModel(ProviderAnthropic)
	}
	env, err := keyEnv(cfg, anthropic.DefaultKeyEnv)
	if err != nil {
		return nil, err
	}
	key := strings.TrimSpace(getenv(env))
	if key == "" {
		return nil, &ConfigError{Keys: []string{"model.api_key_env", env}, Msg: fmt.Sprintf(
			"the anthropic provider needs an API key: export %s=<key> before starting openprogram "+
				"(or name another variable with `openprogram config set model.api_key_env NAME`)", env)}
	}
	p, err := anthropic.New(anthropic.Options{Model: cfg.Model, BaseURL: cfg.BaseURL, APIKey: key})
	if err != nil {
		return nil, &ConfigError{Keys: []string{"model.base_url"}, Msg: err.Error()}
	}
	return provider.WithRetry(p, provider.DefaultRetryPolicy()), nil
}

func newScripted(cfg provider.Config) (provider.Provider, error) {
	path := strings.TrimSpace(cfg.Script)
	if u, err := url.Parse(path); err == nil && u.Scheme == "file" {
		path = u.Path
	}
	if path == "" {
		return nil, &ConfigError{Keys: []string{"model.script"}, Msg: "the scripted provider replays a script file: run " +
			"`openprogram config set model.script /path/to/script.json`"}
	}
	s, err := scripted.Load(path)
	if err != nil {
		return nil, &ConfigError{Keys: []string{"model.script"}, Msg: fmt.Sprintf(
			"the scripted provider cannot use model.script: %v; fix the file or run `openprogram config set model.script /path/to/script.json`", err)}
	}
	return scripted.New(s), nil
}
