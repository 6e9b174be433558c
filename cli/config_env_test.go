package cli_test

import (
	"strings"
	"testing"
)

// TestModelEnvOverrides: OPENPROGRAM_MODEL_PROVIDER, _NAME and _BASE_URL
// replace config.json's model.provider, model.name and model.base_url for
// the commands that run turns (what an MCP bundle's user_config sets), an
// empty value counts as unset, an invalid value is refused naming the
// variable, and config get still shows the file alone.
func TestModelEnvOverrides(t *testing.T) {
	env, _ := fresh(t)
	scriptedModel(t, env, `[{"text":"from the script"}]`)
	mustCLI(t, env, "config", "set", "model.provider", "openai")
	mustCLI(t, env, "config", "set", "model.base_url", "http://127.0.0.1:9/v1")

	t.Run("provider from the environment", func(t *testing.T) {
		got := mustCLI(t, append(env, "OPENPROGRAM_MODEL_PROVIDER=scripted"), "prompt", "hello")
		if !strings.Contains(got, "from the script") {
			t.Errorf("prompt with OPENPROGRAM_MODEL_PROVIDER=scripted = %q, want the scripted reply", got)
		}
		if got := mustCLI(t, append(env, "OPENPROGRAM_MODEL_PROVIDER=scripted"), "config", "get", "--raw", "model.provider"); strings.TrimSpace(got) != "openai" {
			t.Errorf("config get model.provider = %q, want the file's openai", got)
		}
	})
	t.Run("empty counts as unset", func(t *testing.T) {
		r := runCLI(t, append(env, "OPENPROGRAM_MODEL_PROVIDER=", "OPENPROGRAM_MODEL_NAME=", "OPENPROGRAM_MODEL_BASE_URL="), "prompt", "hello")
		if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "model.name") {
			t.Errorf("prompt with empty overrides = exit %d, %q %q; want the file's openai provider asking for model.name", r.code, r.stdout, r.stderr)
		}
	})
	for _, tc := range []struct{ env, value string }{
		{"OPENPROGRAM_MODEL_PROVIDER", "gemini"},
		{"OPENPROGRAM_MODEL_BASE_URL", "ftp://example.com/v1"},
		{"OPENPROGRAM_MODEL_NAME", "${user_config.model_name}"},
	} {
		t.Run("invalid "+tc.env, func(t *testing.T) {
			r := runCLI(t, append(env, tc.env+"="+tc.value), "prompt", "hello")
			if r.code != 1 || !strings.Contains(r.stderr, tc.env) {
				t.Errorf("prompt with %s=%q = exit %d, stderr %q; want exit 1 naming the variable", tc.env, tc.value, r.code, r.stderr)
			}
		})
	}
}
