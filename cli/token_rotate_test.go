package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/cli"
)

// TestTokenPath: `mcp token path` prints where the token lives, whether or
// not it exists, and creates nothing.
func TestTokenPath(t *testing.T) {
	env, state := fresh(t)
	r := runCLI(t, env, "mcp", "token", "path")
	if r.code != 0 || r.stdout != filepath.Join(state, "mcp_server_token")+"\n" || r.stderr != "" {
		t.Errorf("token path = exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("token path created the state directory")
	}
}

// TestTokenRotate: without --yes and without a terminal rotate refuses
// (usage error) and changes nothing; with --yes it prints the new token
// once, the old one stops working, the audit log records it without the
// token, and stderr says which clients to update.
func TestTokenRotate(t *testing.T) {
	env, state := fresh(t)
	path := filepath.Join(state, "mcp_server_token")
	old := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
	mustCLI(t, append(env, "OPENAI_API_KEY=k"), "mcp", "install", "--client", "claude-desktop")

	r := runCLI(t, env, "mcp", "token", "rotate")
	if r.code != cli.ExitUsage || r.stdout != "" || !strings.Contains(r.stderr, "--yes") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("rotate without --yes = exit %d stdout %q stderr %q, want 2 and a hint naming --yes", r.code, r.stdout, r.stderr)
	}
	if data, _ := os.ReadFile(path); string(data) != old {
		t.Fatalf("a refused rotate changed the token")
	}

	r = runCLI(t, env, "mcp", "token", "rotate", "--yes")
	if r.code != 0 {
		t.Fatalf("rotate --yes = exit %d stderr %s", r.code, r.stderr)
	}
	token, rest, _ := strings.Cut(r.stdout, "\n")
	if !tokenPattern.MatchString(token) || rest != "" || token == old {
		t.Errorf("rotate --yes stdout = %q, want one new token line", r.stdout)
	}
	if data, _ := os.ReadFile(path); string(data) != token {
		t.Errorf("token file after rotate is not the printed token")
	}
	if strings.Contains(r.stderr, token) || !strings.Contains(r.stderr, "claude-desktop") {
		t.Errorf("rotate stderr = %q, want a reminder naming the installed client and no token", r.stderr)
	}
	checkPrivate(t, path)

	if r := runCLI(t, append(env, "OPENPROGRAM_MCP_TOKEN="+old), "doctor"); strings.Contains(r.stdout, "matches OPENPROGRAM_MCP_TOKEN") {
		t.Errorf("the old token still matches after rotate:\n%s", r.stdout)
	}

	tail := mustCLI(t, env, "audit", "tail", "-n", "5")
	if !strings.Contains(tail, "mcp.token.rotated") || strings.Contains(tail, token) || strings.Contains(tail, old) {
		t.Errorf("audit tail after rotate = %s, want mcp.token.rotated and no token", tail)
	}
}

// TestTokenRotateWithoutToken: nothing to rotate is a failure naming create.
func TestTokenRotateWithoutToken(t *testing.T) {
	env, _ := fresh(t)
	r := runCLI(t, env, "mcp", "token", "rotate", "--yes")
	if r.code != cli.ExitFailure || r.stdout != "" || !strings.Contains(r.stderr, "mcp token create") {
		t.Errorf("rotate without a token = exit %d stdout %q stderr %q, want 1 and a hint", r.code, r.stdout, r.stderr)
	}
}
