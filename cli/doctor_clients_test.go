package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clientCheckLine renders doctor's check called name (and its fix) as
// one string, or "" when there is none.
func clientCheckLine(t *testing.T, out, name string) string {
	t.Helper()
	for _, c := range parseDoctor(t, out) {
		if c.name == name {
			return c.status + " " + c.info + " fix: " + c.fix
		}
	}
	return ""
}

// TestDoctorClients: doctor notices that Claude Desktop still holds the
// token from before a rotation (and says to install again), a client that
// forwards a variable this environment does not set, and an entry whose
// binary is gone.
func TestDoctorClients(t *testing.T) {
	env, _ := fresh(t)
	exe := filepath.Join(t.TempDir(), "openprogram"+exeSuffix)
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, env, "mcp", "token", "create")
	for _, client := range []string{"claude-desktop", "cursor", "gemini"} {
		if r := runCLIExe(t, env, exe, "mcp", "install", "--client", client); r.code != 0 {
			t.Fatalf("install --client %s: exit %d %s", client, r.code, r.stderr)
		}
	}
	if r := runCLI(t, env, "mcp", "install", "--client", "codex"); r.code != 0 { // testExe does not exist
		t.Fatalf("install --client codex: exit %d %s", r.code, r.stderr)
	}
	token := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "rotate", "--yes"))

	out := runCLI(t, env, "doctor").stdout
	for name, want := range map[string][]string{
		"client claude-desktop": {"FAIL", "old MCP token", "fix: run openprogram mcp install --client claude-desktop"},
		"client cursor":         {"warn", "forwards OPENPROGRAM_MCP_TOKEN", tokenPathExport},
		"client gemini":         {"warn", "forwards OPENPROGRAM_MCP_TOKEN"},
		"client codex":          {"FAIL", testExe + ", which is not an executable file"},
	} {
		line := clientCheckLine(t, out, name)
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("doctor's %s line lacks %q:\n%s\n(all: %s)", name, w, line, out)
			}
		}
	}
	if strings.Contains(out, token) {
		t.Errorf("doctor printed the token")
	}

	if r := runCLIExe(t, env, exe, "mcp", "install", "--client", "claude-desktop"); r.code != 0 {
		t.Fatalf("install again: exit %d %s", r.code, r.stderr)
	}
	out = runCLI(t, append(env, "OPENPROGRAM_MCP_TOKEN="+token), "doctor").stdout
	for _, name := range []string{"client claude-desktop", "client cursor", "client gemini"} {
		if line := clientCheckLine(t, out, name); !strings.HasPrefix(line, "ok ") {
			t.Errorf("doctor after the fixes: %q, want ok", line)
		}
	}
}
