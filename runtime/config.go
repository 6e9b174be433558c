package runtime

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/openprogram/openprogram/internal/shell"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/anthropic"
	"github.com/openprogram/openprogram/runtime/provider/openai"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
	"github.com/openprogram/openprogram/runtime/secretenv"
	"github.com/openprogram/openprogram/sessions"
)

// Provider names accepted in model.provider.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderScripted  = "scripted"
)

// DefaultModelTimeout is model.timeout when it is not set: the longest
// silence of one model request (the wait for the response headers, or any
// gap between two stream events).
const DefaultModelTimeout = 120 * time.Second

// ConfigError reports a model configuration that cannot give a provider.
// Keys names the config.json keys (or environment variables) to set, and the
// message says how; it never contains an API key.
type ConfigError struct {
	Keys []string
	Msg  string
	err  error // the provider's error it came from, if any
}

func (e *ConfigError) Error() string { return "model provider not configured: " + e.Msg }

// Unwrap returns the provider constructor's error this one reports, if
// any (errors.Is(err, provider.ErrUnencryptedKey)).
func (e *ConfigError) Unwrap() error { return e.err }

// NewProvider builds the provider cfg describes (model.provider,
// model.name, model.base_url, model.api_key_env, model.script and the
// generation settings), reading the API key and the ${NAME} references of
// model.headers from the environment through getenv. Network providers come wrapped in
// [provider.WithRetry] with [provider.DefaultRetryPolicy]; the scripted one
// does not (its script decides what fails). A configuration that cannot work
// is a [*ConfigError] saying exactly which keys to set.
//
//   - openai: model.name required; the key is read from the variable named by
//     model.api_key_env (default OPENAI_API_KEY) and may be absent only when
//     model.base_url is a loopback address (a local Ollama, vLLM, llama.cpp
//     or LM Studio) or model.api_key_env is "none" (a keyless server at any
//     URL).
//   - anthropic: model.name required; the key from model.api_key_env
//     (default ANTHROPIC_API_KEY; "none": no key). model.temperature and
//     model.top_p are refused: the Messages API rejects them.
//   - scripted: model.script is the script file (a path or a file:// URL);
//     the generation settings do not apply to a script and are ignored.
//
// model.api_key_env may never name OPENPROGRAM_MCP_TOKEN, nor a header
// reference it: the MCP token is never sent to a model endpoint. A
// model.timeout of 0 means [DefaultModelTimeout]. Neither HTTP provider
// sends the key or model.headers over plain http:// to a host that is not
// this machine unless model.allow_unencrypted_key is true (see
// [provider.Settings].AllowUnencryptedKey): the error names model.base_url
// and model.allow_unencrypted_key and matches [provider.ErrUnencryptedKey].
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

// defaultKeyEnvs is each provider's default API-key variable.
var defaultKeyEnvs = map[string]string{ProviderOpenAI: openai.DefaultKeyEnv, ProviderAnthropic: anthropic.DefaultKeyEnv}

// KeyEnv returns the environment variable the provider cfg describes needs
// its API key in, or "" when it needs none: model.api_key_env, else the
// provider's default (OPENAI_API_KEY, ANTHROPIC_API_KEY). It is "" for
// model.api_key_env "none", for the scripted provider, and for openai at a
// loopback model.base_url with no model.api_key_env (a local server takes
// no key), and for a model.api_key_env that [NewProvider] refuses (the MCP
// token's variable, or no variable name at all). Whoever starts
// `openprogram mcp serve` for a client passes that variable on.
func KeyEnv(cfg provider.Config) string {
	name := strings.ToLower(strings.TrimSpace(cfg.Provider))
	def, ok := defaultKeyEnvs[name]
	if !ok || name == ProviderOpenAI && strings.TrimSpace(cfg.APIKeyEnv) == "" && !openai.KeyRequired(cfg.BaseURL) {
		return ""
	}
	env, _, err := keyEnv(cfg, def, func(string) string { return "" })
	if err != nil {
		return ""
	}
	return env
}

// keyEnv returns the variable the key is read from and the key it holds
// (spaces trimmed; "" when unset). env "" with a nil error means
// model.api_key_env is none (no key).
func keyEnv(cfg provider.Config, def string, getenv func(string) string) (env, key string, err error) {
	env = strings.TrimSpace(cfg.APIKeyEnv)
	if env == "" {
		env = def
	}
	if env == provider.KeyEnvNone {
		return "", "", nil
	}
	if env == secretenv.MCPToken {
		return "", "", &ConfigError{Keys: []string{"model.api_key_env"}, Msg: fmt.Sprintf(
			"model.api_key_env may not be %s: the MCP server token is never sent to a model endpoint; "+
				"run `openprogram config set model.api_key_env %s`", secretenv.MCPToken, def)}
	}
	if !secretenv.ValidName(env) {
		return "", "", &ConfigError{Keys: []string{"model.api_key_env"}, Msg: fmt.Sprintf(
			"model.api_key_env must name an environment variable (letters, digits, _), not hold the key: run `openprogram config set model.api_key_env %s`", def)}
	}
	return env, strings.TrimSpace(getenv(env)), nil
}

// SecretEnv returns the secret environment variables of cfg: the fixed
// ones, the model.api_key_env variable and every variable model.headers
// reads. Whoever builds the tools hands it to them (builtin.Deps.Secrets),
// so no subprocess sees those variables.
func SecretEnv(cfg provider.Config) secretenv.List {
	names := provider.HeaderEnvNames(cfg.Settings.Headers)
	if env := strings.TrimSpace(cfg.APIKeyEnv); env != provider.KeyEnvNone {
		names = append(names, env)
	}
	return secretenv.New(names...)
}

// settings checks cfg's generation settings and returns them ready for a
// provider: headers expanded, the default timeout and the User-Agent set.
func settings(cfg provider.Config, getenv func(string) string) (provider.Settings, error) {
	s := cfg.Settings
	bad := func(key, format string, args ...any) (provider.Settings, error) {
		return provider.Settings{}, &ConfigError{Keys: []string{key}, Msg: key + " " + fmt.Sprintf(format, args...)}
	}
	switch {
	case s.Temperature != nil && !(*s.Temperature >= 0 && *s.Temperature <= 2):
		return bad("model.temperature", "must be between 0 and 2, not %v", *s.Temperature)
	case s.TopP != nil && !(*s.TopP > 0 && *s.TopP <= 1):
		return bad("model.top_p", "must be above 0 and at most 1, not %v", *s.TopP)
	case s.MaxOutputTokens < 0:
		return bad("model.max_output_tokens", "must be positive, not %d", s.MaxOutputTokens)
	case s.Timeout < 0:
		return bad("model.timeout", "must be positive, not %s", s.Timeout)
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultModelTimeout
	}
	h, err := provider.ExpandHeaders(s.Headers, getenv)
	if err != nil {
		return bad("model.headers", "cannot be used: %v", err)
	}
	s.Headers = h
	s.UserAgent = provider.UserAgent(cfg.Version)
	return s, nil
}

// remote is what a provider behind an API is built from: the model, the
// key (keyless: model.api_key_env none, env "") and the settings.
type remote struct {
	env, key string
	keyless  bool
	set      provider.Settings
}

// remoteOf reads the remote of provider kind, whose key is in defEnv
// unless model.api_key_env names another variable.
func remoteOf(cfg provider.Config, kind, defEnv string, getenv func(string) string) (remote, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return remote{}, missingModel(kind)
	}
	env, key, err := keyEnv(cfg, defEnv, getenv)
	if err != nil {
		return remote{}, err
	}
	set, err := settings(cfg, getenv)
	if err != nil {
		return remote{}, err
	}
	return remote{env: env, key: key, keyless: env == "", set: set}, nil
}

// retried is the provider a constructor returned, with the default retry
// policy; its error names model.base_url, the one setting it checks
// beyond what remoteOf did, and model.allow_unencrypted_key when the URL
// is plain http:// to another host (the constructor is the one place that
// decides it).
func retried(p provider.Provider, err error) (provider.Provider, error) {
	if err != nil {
		keys := []string{"model.base_url"}
		if errors.Is(err, provider.ErrUnencryptedKey) {
			keys = append(keys, "model.allow_unencrypted_key")
		}
		return nil, &ConfigError{Keys: keys, Msg: err.Error(), err: err}
	}
	return provider.WithRetry(p, provider.DefaultRetryPolicy()), nil
}

func newOpenAI(cfg provider.Config, getenv func(string) string) (provider.Provider, error) {
	r, err := remoteOf(cfg, ProviderOpenAI, defaultKeyEnvs[ProviderOpenAI], getenv)
	if err != nil {
		return nil, err
	}
	if r.key == "" && !r.keyless && openai.KeyRequired(cfg.BaseURL) {
		where := "the OpenAI API"
		if cfg.BaseURL != "" {
			where = sessions.RedactURL(cfg.BaseURL)
		}
		return nil, &ConfigError{Keys: []string{"model.api_key_env", r.env}, Msg: fmt.Sprintf(
			"the openai provider needs an API key for %s: %s before starting openprogram "+
				"(or name another variable with `openprogram config set model.api_key_env NAME`); "+
				"a local server on a loopback model.base_url needs no key, and for a keyless server elsewhere "+
				"run `openprogram config set model.api_key_env none`", where, shell.Native.Export(r.env, shell.Native.Literal("<key>")))}
	}
	return retried(openai.New(openai.Options{Model: cfg.Model, BaseURL: cfg.BaseURL, APIKey: r.key, Keyless: r.keyless, Settings: r.set}))
}

func newAnthropic(cfg provider.Config, getenv func(string) string) (provider.Provider, error) {
	r, err := remoteOf(cfg, ProviderAnthropic, defaultKeyEnvs[ProviderAnthropic], getenv)
	if err != nil {
		return nil, err
	}
	if err := anthropic.Unsupported(r.set); err != nil {
		return nil, &ConfigError{Keys: []string{"model.temperature", "model.top_p"}, Msg: err.Error()}
	}
	if r.key == "" && !r.keyless {
		return nil, &ConfigError{Keys: []string{"model.api_key_env", r.env}, Msg: fmt.Sprintf(
			"the anthropic provider needs an API key: %s before starting openprogram "+
				"(or name another variable with `openprogram config set model.api_key_env NAME`)", shell.Native.Export(r.env, shell.Native.Literal("<key>")))}
	}
	return retried(anthropic.New(anthropic.Options{Model: cfg.Model, BaseURL: cfg.BaseURL, APIKey: r.key, Keyless: r.keyless, Settings: r.set}))
}

func newScripted(cfg provider.Config) (provider.Provider, error) {
	path := strings.TrimSpace(cfg.Script)
	if u, err := url.Parse(path); err == nil && u.Scheme == "file" {
		path = fileURLPath(u)
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
