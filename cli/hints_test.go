package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHintsForThisShell: the lines doctor and the install hints print to
// paste are in the syntax of this system's shell (PowerShell on Windows, a
// POSIX shell elsewhere), with a state directory whose path needs quoting.
func TestHintsForThisShell(t *testing.T) {
	env, state := fresh(t)
	quoted := filepath.Join(filepath.Dir(state), "Ann's state $x")
	for i, kv := range env {
		if kv == "OPENPROGRAM_HOME="+state {
			env[i] = "OPENPROGRAM_HOME=" + quoted
		}
	}
	mustCLI(t, env, "mcp", "token", "create")
	tokenPath := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "path"))
	want := tokenExport(tokenPath)

	r := runCLI(t, env, "mcp", "client-config", "--client", "cursor")
	if r.code != 0 {
		t.Fatalf("client-config: exit %d %s", r.code, r.stderr)
	}
	checkHint(t, "client-config's hints", r.stderr, want)

	out := runCLI(t, append(env, "OPENPROGRAM_MCP_TOKEN=not-the-token"), "doctor").stdout
	var fix string
	for _, c := range parseDoctor(t, out) {
		if c.name == "token" {
			fix = c.fix
		}
	}
	checkHint(t, "doctor's token fix", fix, want)
}

func checkHint(t *testing.T, what, got, want string) {
	t.Helper()
	if !strings.Contains(got, want) {
		t.Errorf("%s lack %s:\n%s", what, want, got)
	}
	for _, bad := range otherShell {
		if strings.Contains(got, bad) {
			t.Errorf("%s hold %q, the syntax of another shell:\n%s", what, bad, got)
		}
	}
}
