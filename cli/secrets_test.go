package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConfigHidesURLSecrets: list and get hide a store URL's password given
// as a query parameter, and the credentials of a URL that does not parse.
func TestConfigHidesURLSecrets(t *testing.T) {
	for _, url := range []string{
		"postgres://op@db.example/op?sslmode=disable&password=s3cret-pw",
		"postgres://op:s3cret-pw%zz@db.example/op",
	} {
		env, _ := fresh(t)
		mustCLI(t, env, "config", "set", "store.url", url)
		for _, args := range [][]string{{"config", "list"}, {"config", "get", "store.url"}, {"config", "get", "--raw", "store.url"}} {
			if out := mustCLI(t, env, args...); strings.Contains(out, "s3cret-pw") || !strings.Contains(out, "db.example") {
				t.Errorf("store.url %q: %v = %q, want the URL with its secret hidden", url, args, out)
			}
		}
		if out := mustCLI(t, env, "config", "get", "--raw", "--show-secrets", "store.url"); out != url+"\n" {
			t.Errorf("get --raw --show-secrets = %q, want %q", out, url+"\n")
		}
	}
}

// storeSecretURLs are store URLs with a password that fail to connect at
// once (a socket directory that does not exist): in the userinfo, in the
// query, and in a URL that does not parse.
func storeSecretURLs(t *testing.T) []string {
	nowhere := filepath.Join(t.TempDir(), "no-socket-here")
	return []string{
		"postgres://op:s3cret-pw@/op?host=" + nowhere,
		"postgres://op@/op?host=" + nowhere + "&password=s3cret-pw",
		"postgres://op:s3cret-pw%zz@/op?host=" + nowhere,
	}
}

// TestServeStoreErrorHidesPassword: when the store cannot be opened, mcp
// serve's stderr and its --log-file never hold the URL's password.
func TestServeStoreErrorHidesPassword(t *testing.T) {
	for _, url := range storeSecretURLs(t) {
		env, state := fresh(t)
		token := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
		env = append(env, "OPENPROGRAM_MCP_TOKEN="+token, "OPENPROGRAM_DATABASE_URL="+url)
		r := runCLI(t, env, "mcp", "serve", "--log-file", "--log-level", "debug")
		if r.code == 0 || !strings.Contains(r.stderr, "session store") {
			t.Errorf("mcp serve with store %q = exit %d stderr %q, want a store failure", url, r.code, r.stderr)
		}
		data, _ := os.ReadFile(filepath.Join(state, "mcp-serve.log"))
		if out := r.stdout + r.stderr + string(data); strings.Contains(out, "s3cret-pw") {
			t.Errorf("mcp serve with store %q shows the password:\n%s", url, out)
		}
	}
}

// TestDoctorHidesStorePassword: doctor's store check never shows the
// password of a store URL it cannot open.
func TestDoctorHidesStorePassword(t *testing.T) {
	for _, url := range storeSecretURLs(t) {
		env, _ := fresh(t)
		mustCLI(t, env, "mcp", "token", "create")
		r := runCLI(t, append(env, "OPENPROGRAM_DATABASE_URL="+url), "doctor")
		if !strings.Contains(r.stdout+r.stderr, "store") {
			t.Errorf("doctor with store %q reports no store check:\n%s%s", url, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, "s3cret-pw") {
			t.Errorf("doctor with store %q shows the password:\n%s%s", url, r.stdout, r.stderr)
		}
	}
}

// TestPromptBashNeverSeesSecrets: a command the agent runs through bash
// (allowed by a rule) sees none of the secret variables: the one a custom
// model.api_key_env names, one model.headers expands, libpq's password
// variables, the token and the store URL; so neither the session nor
// anything that reads it holds their values.
func TestPromptBashNeverSeesSecrets(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		missingTool(t, "the bash tool runs env with bash: %v", err)
	}
	env, _ := fresh(t)
	scriptedModel(t, env, `[{"tool_calls":[{"id":"c1","name":"bash","arguments":{"command":"env"}}]},{"text":"ran env"}]`)
	mustCLI(t, env, "config", "set", "model.api_key_env", "MY_LLM_TOKEN")
	mustCLI(t, env, "config", "set", "model.headers", `{"X-Gateway":"Bearer ${GW_CRED}"}`)
	mustCLI(t, env, "config", "set", "tools.permission_rules", `[{"tool":"bash","action":"allow"}]`)
	secrets := map[string]string{
		"MY_LLM_TOKEN": "llm-value-1", "GW_CRED": "gw-value-2", "PGPASSWORD": "pg-value-3",
		"PGPASSFILE": "/pgpass-value-4", "OPENPROGRAM_MCP_TOKEN": "mcp-value-5",
	}
	for k, v := range secrets {
		t.Setenv(k, v) // bash inherits the process environment
	}
	t.Setenv("OP_TEST_VISIBLE", "visible-value")
	r := runCLI(t, env, "prompt", "run env")
	if r.code != 0 {
		t.Fatalf("prompt = exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	sid := regexp.MustCompile(`cli_[0-9a-f]{32}`).FindString(r.stderr)
	shown := mustCLI(t, env, "sessions", "show", "--json", sid)
	if !strings.Contains(shown, "OP_TEST_VISIBLE=visible-value") {
		t.Fatalf("the session holds no env output (did bash run?):\n%s", shown)
	}
	for name, v := range secrets {
		if strings.Contains(shown, v) || strings.Contains(shown, name+"=") {
			t.Errorf("bash saw %s: the session holds it:\n%s", name, shown)
		}
	}
}
