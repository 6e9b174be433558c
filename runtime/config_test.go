package runtime_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/internal/shell"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
)

func TestNewProvider(t *testing.T) {
	scriptPath := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(scriptPath, []byte(`{"turns":[{"text":"hi"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": "sk-openai-secret", "ANTHROPIC_API_KEY": "sk-ant-secret", "MY_KEY": "sk-mine-secret",
		"OPENPROGRAM_MCP_TOKEN": "mcp-token-secret", "OR_KEY": "or-secret"}
	temp := 0.7
	getenv := func(k string) string { return env[k] }
	noenv := func(string) string { return "" }

	ok := []struct {
		name   string
		cfg    provider.Config
		getenv func(string) string
		want   string // provider name
	}{
		{"openai", provider.Config{Provider: "openai", Model: "gpt-4o-mini"}, getenv, "openai"},
		{"openai custom env", provider.Config{Provider: "OpenAI", Model: "m", BaseURL: "https://openrouter.ai/api/v1", APIKeyEnv: "MY_KEY"}, getenv, "openai"},
		{"openai loopback keyless", provider.Config{Provider: "openai", Model: "qwen2.5:7b", BaseURL: "http://127.0.0.1:11434/v1"}, noenv, "openai"},
		{"anthropic", provider.Config{Provider: "anthropic", Model: "claude-sonnet-4-5"}, getenv, "anthropic"},
		{"openai keyless remote", provider.Config{Provider: "openai", Model: "m", BaseURL: "http://gpu-box.lan:8000/v1", APIKeyEnv: "none"}, noenv, "openai"},
		{"anthropic keyless", provider.Config{Provider: "anthropic", Model: "m", BaseURL: "http://proxy:8080", APIKeyEnv: "none"}, noenv, "anthropic"},
		{"openai settings", provider.Config{Provider: "openai", Model: "m", Settings: provider.Settings{Temperature: &temp,
			Headers: map[string]string{"Authorization": "Bearer ${OR_KEY}"}}}, getenv, "openai"},
		{"scripted path", provider.Config{Provider: "scripted", Script: scriptPath}, noenv, "scripted"},
		{"scripted file url", provider.Config{Provider: "scripted", Script: fileURL(scriptPath)}, noenv, "scripted"},
	}
	for _, tt := range ok {
		p, err := runtime.NewProvider(tt.cfg, tt.getenv)
		if err != nil {
			t.Errorf("%s: NewProvider(%+v) = %v", tt.name, tt.cfg, err)
			continue
		}
		if p.Name() != tt.want {
			t.Errorf("%s: provider name = %q, want %q", tt.name, p.Name(), tt.want)
		}
	}

	// The system's own words for a missing file ("no such file or
	// directory" on Unix).
	missing := filepath.Join(t.TempDir(), "nope.json")
	_, openErr := os.Open(missing)
	notExist := errors.Unwrap(openErr).Error()
	bad := []struct {
		name     string
		cfg      provider.Config
		getenv   func(string) string
		keys     []string
		contains []string
	}{
		{"nothing", provider.Config{}, getenv, []string{"model.provider", "model.name"},
			[]string{"openprogram config set model.provider openai", "openprogram config set model.name", "OPENAI_API_KEY"}},
		{"unknown", provider.Config{Provider: "gpt"}, getenv, []string{"model.provider"}, []string{`"gpt" is not one of openai, anthropic, scripted`}},
		{"openai no model", provider.Config{Provider: "openai"}, getenv, []string{"model.name"}, []string{"openprogram config set model.name"}},
		{"openai no key", provider.Config{Provider: "openai", Model: "m"}, noenv, []string{"model.api_key_env", "OPENAI_API_KEY"},
			[]string{shell.Native.Export("OPENAI_API_KEY", shell.Native.Literal("<key>")), "model.api_key_env", "loopback"}},
		{"openai remote no key", provider.Config{Provider: "openai", Model: "m", BaseURL: "http://10.0.0.5:8000/v1", APIKeyEnv: "VLLM_KEY"}, getenv,
			[]string{"model.api_key_env", "VLLM_KEY"}, []string{shell.Native.Export("VLLM_KEY", shell.Native.Literal("<key>")), "http://10.0.0.5:8000/v1"}},
		{"openai bad url", provider.Config{Provider: "openai", Model: "m", BaseURL: "ftp://x"}, getenv, []string{"model.base_url"}, []string{"not an http(s) URL"}},
		{"key in api_key_env", provider.Config{Provider: "openai", Model: "m", APIKeyEnv: "sk-pasted-key"}, getenv, []string{"model.api_key_env"},
			[]string{"must name an environment variable"}},
		{"anthropic no key", provider.Config{Provider: "anthropic", Model: "m"}, noenv, []string{"model.api_key_env", "ANTHROPIC_API_KEY"},
			[]string{shell.Native.Export("ANTHROPIC_API_KEY", shell.Native.Literal("<key>"))}},
		{"anthropic no model", provider.Config{Provider: "anthropic"}, getenv, []string{"model.name"}, []string{"model.name"}},
		{"scripted no path", provider.Config{Provider: "scripted"}, noenv, []string{"model.script"}, []string{"openprogram config set model.script"}},
		{"mcp token as key", provider.Config{Provider: "openai", Model: "m", APIKeyEnv: "OPENPROGRAM_MCP_TOKEN"}, getenv, []string{"model.api_key_env"},
			[]string{"may not be OPENPROGRAM_MCP_TOKEN"}},
		{"mcp token as anthropic key", provider.Config{Provider: "anthropic", Model: "m", APIKeyEnv: "OPENPROGRAM_MCP_TOKEN"}, getenv, []string{"model.api_key_env"},
			[]string{"never sent to a model endpoint"}},
		{"mcp token in a header", provider.Config{Provider: "openai", Model: "m", Settings: provider.Settings{
			Headers: map[string]string{"X-A": "${OPENPROGRAM_MCP_TOKEN}"}}}, getenv, []string{"model.headers"}, []string{"MCP server token"}},
		{"header variable unset", provider.Config{Provider: "openai", Model: "m", Settings: provider.Settings{
			Headers: map[string]string{"api-key": "${AZURE_KEY}"}}}, getenv, []string{"model.headers"}, []string{"AZURE_KEY is not set"}},
		{"anthropic temperature", provider.Config{Provider: "anthropic", Model: "m", Settings: provider.Settings{Temperature: &temp}}, getenv,
			[]string{"model.temperature", "model.top_p"}, []string{"rejects temperature"}},
		{"temperature range", provider.Config{Provider: "openai", Model: "m", Settings: provider.Settings{Temperature: ptr(2.5)}}, getenv,
			[]string{"model.temperature"}, []string{"between 0 and 2"}},
		{"top_p range", provider.Config{Provider: "openai", Model: "m", Settings: provider.Settings{TopP: ptr(0.0)}}, getenv,
			[]string{"model.top_p"}, []string{"above 0"}},
		{"scripted missing file", provider.Config{Provider: "scripted", Script: missing}, noenv,
			[]string{"model.script"}, []string{notExist}},
	}
	for _, tt := range bad {
		_, err := runtime.NewProvider(tt.cfg, tt.getenv)
		ce, ok := errors.AsType[*runtime.ConfigError](err)
		if !ok {
			t.Errorf("%s: NewProvider error = %v, want *ConfigError", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.keys, ce.Keys); diff != "" {
			t.Errorf("%s: keys (-want +got):\n%s", tt.name, diff)
		}
		for _, s := range tt.contains {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not contain %q", tt.name, err, s)
			}
		}
		if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "mcp-token") {
			t.Errorf("%s: error %q leaks a key", tt.name, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// KeyEnv is the one answer to "which variable holds the model's API key",
// for the provider and for whoever configures an MCP client.
func TestKeyEnv(t *testing.T) {
	for _, tc := range []struct {
		cfg  provider.Config
		want string
	}{
		{provider.Config{Provider: "openai"}, "OPENAI_API_KEY"},
		{provider.Config{Provider: "openai", BaseURL: "http://127.0.0.1:11434/v1"}, ""},
		{provider.Config{Provider: "openai", BaseURL: "http://127.0.0.1:11434/v1", APIKeyEnv: "LOCAL_KEY"}, "LOCAL_KEY"},
		{provider.Config{Provider: "openai", BaseURL: "https://openrouter.ai/api/v1"}, "OPENAI_API_KEY"},
		{provider.Config{Provider: "openai", APIKeyEnv: "none"}, ""},
		{provider.Config{Provider: "anthropic"}, "ANTHROPIC_API_KEY"},
		{provider.Config{Provider: "anthropic", APIKeyEnv: "MY_KEY"}, "MY_KEY"},
		{provider.Config{Provider: "scripted", APIKeyEnv: "MY_KEY"}, ""},
		{provider.Config{}, ""},
		// What NewProvider refuses is passed on to nobody: the MCP token's
		// variable, or a key pasted where a variable name belongs.
		{provider.Config{Provider: "anthropic", APIKeyEnv: "OPENPROGRAM_MCP_TOKEN"}, ""},
		{provider.Config{Provider: "openai", APIKeyEnv: "sk-proj-abc123"}, ""},
	} {
		if got := runtime.KeyEnv(tc.cfg); got != tc.want {
			t.Errorf("KeyEnv(%+v) = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}

// fileURL is the file:// URL of the absolute path p (file:///C:/x on
// Windows).
func fileURL(p string) string {
	p = filepath.ToSlash(p)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return "file://" + p
}
