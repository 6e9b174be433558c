package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/cli"
)

// placeholder is what client-config prints where the token goes. It must
// not be mistakable for a token.
const placeholder = "<paste the token printed by: openprogram mcp token create>"

// parseJSONSnippet splits a snippet into its "// ..." header line and the
// JSON document after it.
func parseJSONSnippet(t *testing.T, out string) (string, map[string]any) {
	t.Helper()
	header, body, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(header, "// ") {
		t.Errorf("first line = %q, want a // comment saying where the snippet goes", header)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("snippet body is not JSON: %v\n%s", err, body)
	}
	return header, doc
}

// clientEnvs: the OPENPROGRAM_HOME the snippet must carry, per environment.
func clientEnvs(t *testing.T) []struct {
	name     string
	env      cli.Env
	wantHome string // "" = left out
} {
	home := t.TempDir()
	return []struct {
		name     string
		env      cli.Env
		wantHome string
	}{
		{"default state dir", cli.Env{"HOME=" + home}, ""},
		{"OPENPROGRAM_HOME equal to the default", cli.Env{"HOME=" + home, "OPENPROGRAM_HOME=" + filepath.Join(home, ".openprogram")}, ""},
		{"custom OPENPROGRAM_HOME", cli.Env{"HOME=" + home, "OPENPROGRAM_HOME=/srv/op state"}, "/srv/op state"},
		{"profile", cli.Env{"HOME=" + home, "OPENPROGRAM_PROFILE=work"}, filepath.Join(home, ".openprogram-work")},
	}
}

// TestClientConfigJSONClients: claude-desktop (the default), cursor and
// vscode get JSON that starts the absolute binary with `mcp serve`, a
// placeholder (or VS Code input) instead of a token, and OPENPROGRAM_HOME
// only when the state directory is not the default.
func TestClientConfigJSONClients(t *testing.T) {
	for _, ce := range clientEnvs(t) {
		t.Run(ce.name, func(t *testing.T) {
			wantEnv := map[string]any{"OPENPROGRAM_MCP_TOKEN": placeholder}
			if ce.wantHome != "" {
				wantEnv["OPENPROGRAM_HOME"] = ce.wantHome
			}
			for _, args := range [][]string{{}, {"--client", "claude-desktop"}, {"--client", "cursor"}} {
				out := mustCLI(t, ce.env, append([]string{"mcp", "client-config"}, args...)...)
				_, doc := parseJSONSnippet(t, out)
				want := map[string]any{"mcpServers": map[string]any{"openprogram": map[string]any{
					"command": testExe, "args": []any{"mcp", "serve"}, "env": wantEnv,
				}}}
				if diff := cmp.Diff(want, doc); diff != "" {
					t.Errorf("client-config %v (-want +got):\n%s", args, diff)
				}
			}

			out := mustCLI(t, ce.env, "mcp", "client-config", "--client", "vscode")
			_, doc := parseJSONSnippet(t, out)
			vsEnv := map[string]any{"OPENPROGRAM_MCP_TOKEN": "${input:openprogram-mcp-token}"}
			if ce.wantHome != "" {
				vsEnv["OPENPROGRAM_HOME"] = ce.wantHome
			}
			want := map[string]any{
				"inputs": []any{map[string]any{"type": "promptString", "id": "openprogram-mcp-token",
					"description": "OpenProgram MCP server token", "password": true}},
				"servers": map[string]any{"openprogram": map[string]any{
					"type": "stdio", "command": testExe, "args": []any{"mcp", "serve"}, "env": vsEnv}},
			}
			if diff := cmp.Diff(want, doc); diff != "" {
				t.Errorf("client-config --client vscode (-want +got):\n%s", diff)
			}
		})
	}
	if tokenPattern.MatchString(placeholder) || !strings.ContainsAny(placeholder, "<> ") {
		t.Errorf("the placeholder %q could pass for a token", placeholder)
	}
}

// TestClientConfigClaudeCode: the claude-code snippet is a shell command
// whose arguments, as a POSIX shell parses them, add the server with the
// right env and the binary (quoted when its path needs it).
func TestClientConfigClaudeCode(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("the claude-code snippet is checked with a POSIX shell: %v", err)
	}
	weirdExe := "/opt/open program/it's/openprogram"
	for _, ce := range clientEnvs(t) {
		for _, exe := range []string{testExe, weirdExe} {
			t.Run(ce.name+" "+exe, func(t *testing.T) {
				r := runCLIExe(t, ce.env, exe, "mcp", "client-config", "--client", "claude-code")
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				if !strings.HasPrefix(r.stdout, "#") || strings.Count(r.stdout, "\n") != 2 {
					t.Errorf("snippet = %q, want a comment line and one command line", r.stdout)
				}
				// Run the snippet with `claude` defined to print its arguments.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, sh, "-c", "claude() { printf '%s\\n' \"$@\"; }\n"+r.stdout)
				var stdout bytes.Buffer
				cmd.Stdout = &stdout
				if err := cmd.Run(); err != nil {
					t.Fatalf("run the snippet in sh: %v\n%s", err, r.stdout)
				}
				got := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
				want := []string{"mcp", "add", "openprogram"}
				if ce.wantHome != "" {
					want = append(want, "--env", "OPENPROGRAM_HOME="+ce.wantHome)
				}
				want = append(want, "--env", "OPENPROGRAM_MCP_TOKEN="+placeholder, "--", exe, "mcp", "serve")
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("claude's arguments (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestClientConfigCodex: the codex snippet is the TOML table the Codex CLI
// reads.
func TestClientConfigCodex(t *testing.T) {
	for _, ce := range clientEnvs(t) {
		t.Run(ce.name, func(t *testing.T) {
			out := mustCLI(t, ce.env, "mcp", "client-config", "--client", "codex")
			env := `OPENPROGRAM_MCP_TOKEN = "` + placeholder + `"`
			if ce.wantHome != "" {
				env = `OPENPROGRAM_HOME = "` + ce.wantHome + `", ` + env
			}
			want := "# Add to ~/.codex/config.toml:\n" +
				"[mcp_servers.openprogram]\n" +
				`command = "` + testExe + "\"\n" +
				`args = ["mcp", "serve"]` + "\n" +
				"env = { " + env + " }\n"
			if diff := cmp.Diff(want, out); diff != "" {
				t.Errorf("codex snippet (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClientConfigNeverPrintsTheToken: with a token created and in the
// environment, no snippet contains it.
func TestClientConfigNeverPrintsTheToken(t *testing.T) {
	env, _ := fresh(t)
	token := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
	env = append(env, "OPENPROGRAM_MCP_TOKEN="+token)
	for _, client := range []string{"claude-desktop", "claude-code", "cursor", "vscode", "codex"} {
		if out := mustCLI(t, env, "mcp", "client-config", "--client", client); strings.Contains(out, token) {
			t.Errorf("client-config --client %s printed the token", client)
		}
	}
}

// TestClientConfigWithoutExecutable: without the binary's path there is
// nothing correct to print.
func TestClientConfigWithoutExecutable(t *testing.T) {
	env, _ := fresh(t)
	r := runCLIExe(t, env, "", "mcp", "client-config")
	if r.code != cli.ExitFailure || r.stdout != "" || !strings.Contains(r.stderr, "absolute path") {
		t.Errorf("client-config without an executable = exit %d stdout %q stderr %q, want 1 and a hint", r.code, r.stdout, r.stderr)
	}
}
