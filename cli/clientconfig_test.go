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
	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"

	"github.com/openprogram/openprogram/cli"
)

// placeholder is what client-config prints where a literal token goes. It
// must not be mistakable for a token.
const placeholder = "<paste the token printed by: openprogram mcp token create>"

// clientCase is one environment and model configuration client-config is
// tried with, and what the snippets must then carry.
type clientCase struct {
	name     string
	env      cli.Env
	config   [][2]string // config set KEY VALUE, in order
	wantHome string      // OPENPROGRAM_HOME in the entry; "" = left out
	wantKey  string      // the model key variable passed through; "" = none
}

func clientCases(t *testing.T) []clientCase {
	t.Helper()
	home := t.TempDir()
	base := homeVars(home)
	return []clientCase{
		{name: "default state dir, no provider", env: base},
		{name: "OPENPROGRAM_HOME equal to the default", env: append(base, "OPENPROGRAM_HOME="+filepath.Join(home, ".openprogram"))},
		{name: "custom OPENPROGRAM_HOME, openai", env: append(base, "OPENPROGRAM_HOME="+filepath.Join(home, "op state")),
			config: [][2]string{{"model.provider", "openai"}, {"model.name", "gpt-x"}}, wantHome: filepath.Join(home, "op state"), wantKey: "OPENAI_API_KEY"},
		{name: "profile, anthropic", env: append(base, "OPENPROGRAM_PROFILE=work"),
			config: [][2]string{{"model.provider", "anthropic"}, {"model.name", "claude-x"}}, wantHome: filepath.Join(home, ".openprogram-work"), wantKey: "ANTHROPIC_API_KEY"},
		{name: "openai with model.api_key_env", env: append(base, "OPENPROGRAM_PROFILE=keyed"),
			config:   [][2]string{{"model.provider", "openai"}, {"model.name", "m"}, {"model.api_key_env", "MY_KEY"}},
			wantHome: filepath.Join(home, ".openprogram-keyed"), wantKey: "MY_KEY"},
		{name: "openai on a loopback server needs no key", env: append(base, "OPENPROGRAM_PROFILE=local"),
			config:   [][2]string{{"model.provider", "openai"}, {"model.name", "m"}, {"model.base_url", "http://127.0.0.1:11434/v1"}},
			wantHome: filepath.Join(home, ".openprogram-local")},
		{name: "scripted needs no key", env: append(base, "OPENPROGRAM_PROFILE=demo"),
			config: [][2]string{{"model.provider", "scripted"}}, wantHome: filepath.Join(home, ".openprogram-demo")},
	}
}

func (c clientCase) setup(t *testing.T) {
	t.Helper()
	for _, kv := range c.config {
		mustCLI(t, c.env, "config", "set", kv[0], kv[1])
	}
}

// secrets is the list of variables the entry must pass: the token, then the key.
func (c clientCase) secrets() []string {
	if c.wantKey == "" {
		return []string{"OPENPROGRAM_MCP_TOKEN"}
	}
	return []string{"OPENPROGRAM_MCP_TOKEN", c.wantKey}
}

// wantEnv builds the env object of a JSON entry: OPENPROGRAM_HOME when
// expected, and each secret rendered by value.
func (c clientCase) wantEnv(value func(name string) string) map[string]any {
	env := map[string]any{}
	if c.wantHome != "" {
		env["OPENPROGRAM_HOME"] = c.wantHome
	}
	for _, s := range c.secrets() {
		env[s] = value(s)
	}
	return env
}

// clientConfig runs client-config and checks the stream discipline: exit 0,
// stdout exactly the snippet, hints on stderr, no HTML escapes.
func clientConfig(t *testing.T, env cli.Env, client string) string {
	t.Helper()
	r := runCLI(t, env, "mcp", "client-config", "--client", client)
	if r.code != 0 {
		t.Fatalf("client-config --client %s: exit %d: %s", client, r.code, r.stderr)
	}
	if strings.Contains(r.stdout, `\u00`) {
		t.Errorf("client-config --client %s escapes characters:\n%s", client, r.stdout)
	}
	if r.stderr == "" {
		t.Errorf("client-config --client %s printed no hint on stderr", client)
	}
	return r.stdout
}

// strictJSON decodes data as one JSON document and nothing else.
func strictJSON(t *testing.T, data string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(data))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, data)
	}
	if dec.More() {
		t.Fatalf("stdout has more than one JSON document:\n%s", data)
	}
	return doc
}

// TestClientConfigClaudeDesktopCursor: stdout is one JSON document whose
// entry starts the absolute binary with `mcp serve`; Claude Desktop gets
// placeholders (it passes no environment), Cursor ${env:NAME}.
func TestClientConfigClaudeDesktopCursor(t *testing.T) {
	for _, c := range clientCases(t) {
		t.Run(c.name, func(t *testing.T) {
			c.setup(t)
			for _, client := range []string{"claude-desktop", "cursor"} {
				entry := map[string]any{"command": testExe, "args": []any{"mcp", "serve"}}
				if client == "cursor" {
					entry["type"] = "stdio"
					entry["env"] = c.wantEnv(func(s string) string { return "${env:" + s + "}" })
				} else {
					entry["env"] = c.wantEnv(func(s string) string {
						if s == "OPENPROGRAM_MCP_TOKEN" {
							return placeholder
						}
						return "<paste the value of " + s + ">"
					})
				}
				want := map[string]any{"mcpServers": map[string]any{"openprogram": entry}}
				if diff := cmp.Diff(want, strictJSON(t, clientConfig(t, c.env, client))); diff != "" {
					t.Errorf("client-config --client %s (-want +got):\n%s", client, diff)
				}
			}
		})
	}
	if tokenPattern.MatchString(placeholder) || !strings.ContainsAny(placeholder, "<> ") {
		t.Errorf("the placeholder %q could pass for a token", placeholder)
	}
}

// TestClientConfigDefaultClient: without --client the snippet is Claude
// Desktop's.
func TestClientConfigDefaultClient(t *testing.T) {
	env, _ := fresh(t)
	if a, b := mustCLI(t, env, "mcp", "client-config"), mustCLI(t, env, "mcp", "client-config", "--client", "claude-desktop"); a != b {
		t.Errorf("client-config without --client = %q, want the claude-desktop snippet %q", a, b)
	}
}

// TestClientConfigVSCode: stdout is JSONC VS Code reads (checked with a
// JSONC parser): every secret comes from a password input.
func TestClientConfigVSCode(t *testing.T) {
	for _, c := range clientCases(t) {
		t.Run(c.name, func(t *testing.T) {
			c.setup(t)
			out := clientConfig(t, c.env, "vscode")
			std, err := hujson.Standardize([]byte(out))
			if err != nil {
				t.Fatalf("stdout is not JSONC: %v\n%s", err, out)
			}
			ids := map[string]string{"OPENPROGRAM_MCP_TOKEN": "openprogram-mcp-token"}
			if c.wantKey != "" {
				ids[c.wantKey] = "openprogram-" + strings.ToLower(strings.ReplaceAll(c.wantKey, "_", "-"))
			}
			var inputs []any
			for _, s := range c.secrets() {
				desc := "OpenProgram MCP server token"
				if s != "OPENPROGRAM_MCP_TOKEN" {
					desc = "API key for OpenProgram's model (" + s + ")"
				}
				inputs = append(inputs, map[string]any{"type": "promptString", "id": ids[s], "description": desc, "password": true})
			}
			want := map[string]any{
				"inputs": inputs,
				"servers": map[string]any{"openprogram": map[string]any{
					"type": "stdio", "command": testExe, "args": []any{"mcp", "serve"},
					"env": c.wantEnv(func(s string) string { return "${input:" + ids[s] + "}" })}},
			}
			if diff := cmp.Diff(want, strictJSON(t, string(std))); diff != "" {
				t.Errorf("client-config --client vscode (-want +got):\n%s", diff)
			}
		})
	}
}

// codexEntry is the part of Codex's config.toml the tests read.
type codexEntry struct {
	Command        string            `toml:"command"`
	Args           []string          `toml:"args"`
	Env            map[string]string `toml:"env"`
	EnvVars        []string          `toml:"env_vars"`
	ToolTimeoutSec int               `toml:"tool_timeout_sec"`
}

type codexConfig struct {
	MCPServers map[string]codexEntry `toml:"mcp_servers"`
}

// TestClientConfigCodex: stdout is TOML (parsed with a TOML parser) that
// forwards the secrets by name and allows ten-minute tool calls.
func TestClientConfigCodex(t *testing.T) {
	for _, c := range clientCases(t) {
		t.Run(c.name, func(t *testing.T) {
			c.setup(t)
			out := clientConfig(t, c.env, "codex")
			var got codexConfig
			if err := toml.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("stdout is not TOML: %v\n%s", err, out)
			}
			want := codexEntry{Command: testExe, Args: []string{"mcp", "serve"}, EnvVars: c.secrets(), ToolTimeoutSec: 600}
			if c.wantHome != "" {
				want.Env = map[string]string{"OPENPROGRAM_HOME": c.wantHome}
			}
			if diff := cmp.Diff(map[string]codexEntry{"openprogram": want}, got.MCPServers); diff != "" {
				t.Errorf("codex snippet (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClientConfigClaudeCode: stdout is one shell command; as a POSIX shell
// parses it, it adds the server for the user with each secret as ${NAME}
// (expanded by Claude Code, so no secret reaches the shell's history).
func TestClientConfigClaudeCode(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		missingTool(t, "the claude-code snippet is checked with a POSIX shell: %v", err)
	}
	weirdExe := "/opt/open program/it's/openprogram"
	for _, c := range clientCases(t) {
		for _, exe := range []string{testExe, weirdExe} {
			t.Run(c.name+" "+exe, func(t *testing.T) {
				c.setup(t)
				r := runCLIExe(t, c.env, exe, "mcp", "client-config", "--client", "claude-code")
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stderr)
				}
				if strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "claude ") {
					t.Errorf("snippet = %q, want one command line", r.stdout)
				}
				got := runWithFakeClaude(t, sh, r.stdout)
				// The name comes before the options: --env takes every
				// following word up to the next option, so a name after it
				// is read as one more variable.
				want := []string{"mcp", "add", "openprogram", "--scope", "user"}
				if c.wantHome != "" {
					want = append(want, "--env", "OPENPROGRAM_HOME="+c.wantHome)
				}
				for _, s := range c.secrets() {
					want = append(want, "--env", s+"=${"+s+"}")
				}
				want = append(want, "--", exe, "mcp", "serve")
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("claude's arguments (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// runWithFakeClaude runs script in sh with `claude` defined to print its
// arguments, one a line, and returns them.
func runWithFakeClaude(t *testing.T, sh, script string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, "-c", "claude() { printf '%s\\n' \"$@\"; }\n"+script)
	cmd.Env = []string{"OPENPROGRAM_MCP_TOKEN=must-not-be-expanded", "OPENAI_API_KEY=nor-this"}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("run the snippet in sh: %v\n%s", err, script)
	}
	return strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
}

// TestClientConfigNeverPrintsTheToken: with a token created and in the
// environment, no snippet (nor hint) contains it.
func TestClientConfigNeverPrintsTheToken(t *testing.T) {
	env, _ := fresh(t)
	token := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
	env = append(env, "OPENPROGRAM_MCP_TOKEN="+token)
	for _, client := range []string{"claude-desktop", "claude-code", "cursor", "vscode", "codex", "opencode", "gemini"} {
		r := runCLI(t, env, "mcp", "client-config", "--client", client)
		if strings.Contains(r.stdout, token) || strings.Contains(r.stderr, token) {
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
