package cli_test

import (
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/cli"
)

var tokenPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// TestTokenCreate: the token is printed once with a newline, 43 base64url
// characters, stored 0600 without a newline, in a state directory created
// 0700 with its missing parents; a second create refuses, prints nothing
// on stdout and leaves the file alone.
func TestTokenCreate(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "a", "b", "state")
	env := cli.Env{"HOME=" + root, "OPENPROGRAM_HOME=" + state}

	r := runCLI(t, env, "mcp", "token", "create")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("token create = exit %d stderr %q, want 0 and no stderr", r.code, r.stderr)
	}
	token, rest, found := strings.Cut(r.stdout, "\n")
	if !found || rest != "" || !tokenPattern.MatchString(token) {
		t.Errorf("stdout = %q, want 43 base64url characters and one newline", r.stdout)
	}
	if r.stdinReads != 0 {
		t.Errorf("token create read stdin %d times", r.stdinReads)
	}
	path := filepath.Join(state, "mcp_server_token")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != token {
		t.Errorf("token file = %q, want the printed token without a newline", data)
	}
	checkPrivate(t, path)
	for _, dir := range []string{filepath.Join(root, "a"), filepath.Join(root, "a", "b"), state} {
		checkPrivate(t, dir)
	}
	checkOnlyFiles(t, state, "mcp_server_token")

	again := runCLI(t, env, "mcp", "token", "create")
	wantExists := "Error: MCP server token already exists: " + path + " (to replace it: openprogram mcp token rotate)\n"
	if again.code != cli.ExitFailure || again.stdout != "" || again.stderr != wantExists {
		t.Errorf("second create = exit %d stdout %q stderr %q, want 1, nothing, the fixed line", again.code, again.stdout, again.stderr)
	}
	if data2, _ := os.ReadFile(path); string(data2) != token {
		t.Errorf("the token file changed on the second create")
	}

	other, _ := fresh(t)
	if second := strings.TrimSpace(mustCLI(t, other, "mcp", "token", "create")); second == token {
		t.Errorf("two installs got the same token")
	}
}

// TestTokenCreateFailure: a state directory that cannot hold the token
// fails with the fixed line, prints no token and writes none.
func TestTokenCreateFailure(t *testing.T) {
	for name, setup := range map[string]func(t *testing.T, root string) string{
		"state dir open to others": func(t *testing.T, root string) string {
			dir := filepath.Join(root, "state")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			openToOthers(t, dir)
			return dir
		},
		"state dir is a file": func(t *testing.T, root string) string {
			path := filepath.Join(root, "state")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		},
		"state dir is a symlink": func(t *testing.T, root string) string {
			skipWithoutSymlinks(t)
			real := filepath.Join(root, "real")
			if err := os.Mkdir(real, 0o700); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(root, "state")
			if err := os.Symlink(real, link); err != nil {
				t.Fatal(err)
			}
			return link
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			state := setup(t, root)
			r := runCLI(t, append(homeVars(root), "OPENPROGRAM_HOME="+state), "mcp", "token", "create")
			if r.code != cli.ExitFailure || r.stdout != "" || firstLine(r.stderr) != "Error: could not create MCP server token" {
				t.Errorf("token create = exit %d stdout %q stderr %q, want 1, nothing, the fixed line", r.code, r.stdout, r.stderr)
			}
			if _, err := os.Lstat(filepath.Join(root, "real", "mcp_server_token")); err == nil {
				t.Errorf("a token was written through the symlink")
			}
			if _, err := os.Lstat(filepath.Join(state, "mcp_server_token")); err == nil {
				t.Errorf("a token was written")
			}
		})
	}
}

// TestServeAuthenticationFailsFirst: `mcp serve` authenticates before it
// touches stdin: each failure is exit 1 with the fixed first line, no
// stdout, no stdin read, no token part on stderr and no token created.
func TestServeAuthenticationFailsFirst(t *testing.T) {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	stranger := base64.RawURLEncoding.EncodeToString(b)
	for _, tc := range []struct {
		name      string
		withToken bool
		envToken  func(token string) []string
	}{
		{"no token file", false, func(string) []string { return []string{"OPENPROGRAM_MCP_TOKEN=" + stranger} }},
		{"no env var", true, func(string) []string { return nil }},
		{"empty env var", true, func(string) []string { return []string{"OPENPROGRAM_MCP_TOKEN="} }},
		{"wrong token", true, func(string) []string { return []string{"OPENPROGRAM_MCP_TOKEN=" + stranger} }},
		{"token with a newline", true, func(tok string) []string { return []string{"OPENPROGRAM_MCP_TOKEN=" + tok + "\n"} }},
		{"bad profile", false, func(string) []string {
			return []string{"OPENPROGRAM_MCP_TOKEN=" + stranger, "OPENPROGRAM_PROFILE=../x"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, state := fresh(t)
			token := ""
			if tc.withToken {
				token = strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
			}
			extra := tc.envToken(token)
			if tc.name == "bad profile" {
				env = cli.Env{env[0]} // HOME only, so the profile decides
			}
			r := runCLI(t, append(env, extra...), "mcp", "serve")
			if r.code != cli.ExitFailure || r.stdout != "" || firstLine(r.stderr) != "Error: MCP server authentication failed" {
				t.Errorf("mcp serve = exit %d stdout %q stderr %q, want 1, nothing, the fixed line", r.code, r.stdout, r.stderr)
			}
			if n := strings.Count(r.stderr, "\n"); n > 2 {
				t.Errorf("stderr has %d lines, want at most the fixed line and a cause", n)
			}
			if r.stdinReads != 0 {
				t.Errorf("mcp serve read stdin %d times before authenticating", r.stdinReads)
			}
			for _, secret := range []string{token, stranger} {
				for i := 0; secret != "" && i+8 <= len(secret); i++ {
					if strings.Contains(r.stderr, secret[i:i+8]) {
						t.Errorf("stderr holds part of a token: %q", r.stderr)
						break
					}
				}
			}
			if !tc.withToken {
				if _, err := os.Lstat(filepath.Join(state, "mcp_server_token")); err == nil {
					t.Errorf("mcp serve created a token")
				}
			}
		})
	}
}
