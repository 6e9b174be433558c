package runtime_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/internal/wine"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/builtin"
	"github.com/openprogram/openprogram/runtime/builtin/bash"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/tool"
)

// TestSecretEnvNeverReachesBash runs `env` through the bash tool of a
// registry built the way the CLI builds it, with the configuration's secret
// list: the key variable a custom model.api_key_env names, a variable
// model.headers expands, and libpq's password variables are all gone.
func TestSecretEnvNeverReachesBash(t *testing.T) {
	if wine.Detected() {
		t.Skip("Wine has no bash (no Git for Windows) and its powershell.exe is a stub that runs nothing; the windows-latest job runs this with Git Bash")
	}
	cfg := provider.Config{Provider: "openai", Model: "m", APIKeyEnv: "MY_LLM_TOKEN",
		Settings: provider.Settings{Headers: map[string]string{"X-Gateway": "Bearer ${GW_CRED}", "X-Org": "${ORG_ID}-team"}}}
	values := map[string]string{
		"MY_LLM_TOKEN": "llm-value-1", "GW_CRED": "gw-value-2", "ORG_ID": "org-value-3",
		"PGPASSWORD": "pg-value-4", "PGPASSFILE": "/pgpass-value-5",
		"OPENPROGRAM_MCP_TOKEN": "mcp-value-6", "OPENPROGRAM_DATABASE_URL": "postgres://u:db-value-7@h/db",
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "KEEP_ME=visible"}
	for k, v := range values {
		env = append(env, k+"="+v)
	}
	reg := tool.NewRegistry()
	err := builtin.Register(reg, builtin.Deps{WorkDirs: []string{t.TempDir()}, Secrets: runtime.SecretEnv(cfg),
		Bash: &bash.Options{Env: env}})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := reg.Get("bash")
	if !ok {
		t.Fatal("no bash tool registered")
	}
	args, _ := json.Marshal(map[string]any{"command": "env"})
	res := tool.NewExecutor(nil).Execute(context.Background(), b, "c1", args, nil)
	out := res.Text()
	if !strings.Contains(out, "KEEP_ME=visible") {
		t.Fatalf("env output lacks the ordinary variable (did the command run?): %s", out)
	}
	for name, v := range values {
		if strings.Contains(out, v) || strings.Contains(out, name+"=") {
			t.Errorf("bash saw secret %s: %s", name, out)
		}
	}
}

// TestProviderErrorsHideURLSecrets: a configuration error that quotes
// model.base_url shows it through the one URL redaction.
func TestProviderErrorsHideURLSecrets(t *testing.T) {
	for _, cfg := range []provider.Config{
		{Provider: "openai", Model: "m", BaseURL: "https://op:s3cret-pw@gw.example/v1?api-key=s3cret-pw"},
		{Provider: "openai", Model: "m", BaseURL: "ftp://op:s3cret-pw@gw.example/v1", APIKeyEnv: provider.KeyEnvNone},
		{Provider: "anthropic", Model: "m", BaseURL: "ftp://op:s3cret-pw@gw.example/v1", APIKeyEnv: provider.KeyEnvNone},
	} {
		_, err := runtime.NewProvider(cfg, func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), "gw.example") {
			t.Errorf("NewProvider(%s at %s) error = %v, want one naming the URL", cfg.Provider, cfg.BaseURL, err)
			continue
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("NewProvider(%s) error shows the URL's secret: %v", cfg.Provider, err)
		}
	}
}
