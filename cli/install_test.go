package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"

	"github.com/openprogram/openprogram/cli"
)

// installClient is one client whose configuration file install writes.
type installClient struct {
	client string
	path   func(home string) string
	// existing is a file with another server, comments and unknown keys.
	existing string
	// keep are strings of existing that must survive install and uninstall.
	keep []string
	// entry extracts our entry (nil when absent) and the other server's
	// command from the file, with a real parser for the format.
	entry func(t *testing.T, data []byte) (ours map[string]any, other string)
}

// jsoncEntry reads top.openprogram and top.other.command from JSON or JSONC.
func jsoncEntry(top string) func(t *testing.T, data []byte) (map[string]any, string) {
	return func(t *testing.T, data []byte) (map[string]any, string) {
		t.Helper()
		std, err := hujson.Standardize(append([]byte(nil), data...))
		if err != nil {
			t.Fatalf("the file is not JSONC: %v\n%s", err, data)
		}
		var doc map[string]map[string]map[string]any
		if err := json.Unmarshal(std, &doc); err != nil {
			// inputs and unknown keys are not server maps: read the servers alone.
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(std, &raw); err != nil {
				t.Fatalf("the file is not a JSON object: %v", err)
			}
			var servers map[string]map[string]any
			if err := json.Unmarshal(raw[top], &servers); err != nil && raw[top] != nil {
				t.Fatalf("%s is not an object of servers: %v", top, err)
			}
			doc = map[string]map[string]map[string]any{top: servers}
		}
		other, _ := doc[top]["other"]["command"].(string)
		return doc[top]["openprogram"], other
	}
}

func codexFileEntry(t *testing.T, data []byte) (map[string]any, string) {
	t.Helper()
	var doc struct {
		MCPServers map[string]map[string]any `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the file is not TOML: %v\n%s", err, data)
	}
	other, _ := doc.MCPServers["other"]["command"].(string)
	return doc.MCPServers["openprogram"], other
}

var installClients = []installClient{
	{
		client: "claude-desktop",
		path: func(home string) string {
			return filepath.Join(userConfigDir(home), "Claude", "claude_desktop_config.json")
		},
		existing: `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "other": {
      "command": "/usr/bin/other",
      "args": []
    }
  }
}
`,
		keep:  []string{`"globalShortcut": "Ctrl+Space"`},
		entry: jsoncEntry("mcpServers"),
	},
	{
		client: "cursor",
		path:   func(home string) string { return filepath.Join(home, ".cursor", "mcp.json") },
		existing: `{
  "mcpServers": {
    "other": {"command": "/usr/bin/other"}
  },
  "unknownKey": [1, 2]
}
`,
		keep:  []string{`"unknownKey": [1, 2]`},
		entry: jsoncEntry("mcpServers"),
	},
	{
		client: "vscode",
		path:   func(home string) string { return filepath.Join(userConfigDir(home), "Code", "User", "mcp.json") },
		existing: `{
    // My servers.
    "servers": {
        "other": {"type": "stdio", "command": "/usr/bin/other"}, // keep this comment
    },
    /* inputs of my own */
    "inputs": [
        {"type": "promptString", "id": "mine", "password": true},
    ],
}
`,
		keep:  []string{"// My servers.", "// keep this comment", "/* inputs of my own */", `"id": "mine"`},
		entry: jsoncEntry("servers"),
	},
	{
		client: "codex",
		path:   func(home string) string { return filepath.Join(home, ".codex", "config.toml") },
		existing: `# my Codex settings
model = "o3" # the model

[mcp_servers.other]
command = "/usr/bin/other"

# profiles follow
[profiles.fast]
model = "o4-mini"
`,
		keep:  []string{"# my Codex settings", `model = "o3" # the model`, "# profiles follow", "[profiles.fast]"},
		entry: codexFileEntry,
	},
	{
		client: "opencode",
		path:   func(home string) string { return filepath.Join(home, ".config", "opencode", "opencode.json") },
		existing: `{
  "$schema": "https://opencode.ai/config.json",
  // my model
  "model": "anthropic/claude-sonnet-4-5",
  "mcp": {
    "other": {"type": "local", "command": ["/usr/bin/other", "--flag"], "enabled": true}
  }
}
`,
		keep:  []string{"// my model", `"model": "anthropic/claude-sonnet-4-5"`},
		entry: opencodeFileEntry,
	},
	{
		client: "gemini",
		path:   func(home string) string { return filepath.Join(home, ".gemini", "settings.json") },
		existing: `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "mcpServers": {
    "other": {"command": "/usr/bin/other", "args": []}
  }
}
`,
		keep:  []string{`"security": {"auth": {"selectedType": "gemini-api-key"}}`},
		entry: jsoncEntry("mcpServers"),
	},
}

// opencodeFileEntry reads opencode's entries into the shape of the others:
// command and args from the one command list, env from environment.
func opencodeFileEntry(t *testing.T, data []byte) (map[string]any, string) {
	t.Helper()
	std, err := hujson.Standardize(append([]byte(nil), data...))
	if err != nil {
		t.Fatalf("the file is not JSONC: %v\n%s", err, data)
	}
	var doc struct {
		MCP map[string]struct {
			Type        string         `json:"type"`
			Command     []any          `json:"command"`
			Enabled     bool           `json:"enabled"`
			Environment map[string]any `json:"environment"`
		} `json:"mcp"`
	}
	if err := json.Unmarshal(std, &doc); err != nil {
		t.Fatalf("the file is not opencode's shape: %v", err)
	}
	var other string
	if o, ok := doc.MCP["other"]; ok && len(o.Command) > 0 {
		other, _ = o.Command[0].(string)
	}
	e, ok := doc.MCP["openprogram"]
	if !ok {
		return nil, other
	}
	if e.Type != "local" || !e.Enabled || len(e.Command) == 0 {
		t.Errorf("opencode entry = %+v, want an enabled local server", e)
		return map[string]any{}, other
	}
	return map[string]any{"command": e.Command[0], "args": e.Command[1:], "env": e.Environment}, other
}

// installEnv is a fresh HOME with a token and the openai provider set, and
// the key in the environment.
func installEnv(t *testing.T) (cli.Env, string) {
	t.Helper()
	home := t.TempDir()
	env := append(homeVars(home), "OPENAI_API_KEY=sk-test-key-0123", "PATH="+filepath.Join(home, "bin"))
	mustCLI(t, env, "mcp", "token", "create")
	mustCLI(t, env, "config", "set", "model.provider", "openai")
	mustCLI(t, env, "config", "set", "model.name", "gpt-x")
	return env, home
}

func backups(t *testing.T, path string) []string {
	t.Helper()
	m, err := filepath.Glob(path + ".bak-*")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkOurs checks the entry install wrote: the binary, `mcp serve`, and the
// secrets passed the client's way.
func checkOurs(t *testing.T, client string, ours map[string]any, token string) {
	t.Helper()
	if ours == nil {
		t.Fatalf("%s: no openprogram entry", client)
	}
	if ours["command"] != testExe || !cmp.Equal(ours["args"], []any{"mcp", "serve"}) {
		t.Errorf("%s: entry runs %v %v, want %s mcp serve", client, ours["command"], ours["args"], testExe)
	}
	env, _ := ours["env"].(map[string]any)
	switch client {
	case "claude-desktop":
		want := map[string]any{"OPENPROGRAM_MCP_TOKEN": token, "OPENAI_API_KEY": "sk-test-key-0123"}
		if diff := cmp.Diff(want, env); diff != "" {
			t.Errorf("claude-desktop env (-want +got):\n%s", diff)
		}
	case "cursor", "opencode", "gemini":
		// Each names the variables of its own environment its way.
		ref := map[string]string{"cursor": "${env:%s}", "opencode": "{env:%s}", "gemini": "$%s"}[client]
		want := map[string]any{"OPENPROGRAM_MCP_TOKEN": fmt.Sprintf(ref, "OPENPROGRAM_MCP_TOKEN"), "OPENAI_API_KEY": fmt.Sprintf(ref, "OPENAI_API_KEY")}
		if diff := cmp.Diff(want, env); diff != "" {
			t.Errorf("%s env (-want +got):\n%s", client, diff)
		}
		if client == "gemini" && ours["timeout"] != float64(600000) {
			t.Errorf("gemini timeout %v, want 600000", ours["timeout"])
		}
	case "vscode":
		want := map[string]any{"OPENPROGRAM_MCP_TOKEN": "${input:openprogram-mcp-token}", "OPENAI_API_KEY": "${input:openprogram-openai-api-key}"}
		if diff := cmp.Diff(want, env); diff != "" {
			t.Errorf("vscode env (-want +got):\n%s", diff)
		}
	case "codex":
		if !cmp.Equal(ours["env_vars"], []any{"OPENPROGRAM_MCP_TOKEN", "OPENAI_API_KEY"}) || ours["tool_timeout_sec"] != int64(600) || env != nil {
			t.Errorf("codex entry = %v, want env_vars forwarding both secrets, tool_timeout_sec 600 and no env", ours)
		}
	}
}

// TestInstall: for each client, into a fresh file and into one with other
// servers and comments; a second run changes nothing; the old file is backed
// up; uninstall takes out only our entry.
func TestInstall(t *testing.T) {
	for _, ic := range installClients {
		t.Run(ic.client+" fresh", func(t *testing.T) {
			env, home := installEnv(t)
			path := ic.path(home)
			r := runCLI(t, env, "mcp", "install", "--client", ic.client)
			if r.code != 0 || r.stdout != "" {
				t.Fatalf("install = exit %d stdout %q stderr %s", r.code, r.stdout, r.stderr)
			}
			token := strings.TrimSpace(string(readFile(t, filepath.Join(home, ".openprogram", "mcp_server_token"))))
			ours, _ := ic.entry(t, readFile(t, path))
			checkOurs(t, ic.client, ours, token)
			if got := backups(t, path); len(got) != 0 {
				t.Errorf("install into a new file made backups %v", got)
			}
			checkPrivate(t, path)
			if ic.client == "claude-desktop" {
				if !strings.Contains(r.stderr, "written into the file") {
					t.Errorf("install --client claude-desktop does not say the token went into the file: %s", r.stderr)
				}
			} else if strings.Contains(string(readFile(t, path)), token) || strings.Contains(string(readFile(t, path)), "sk-test-key") {
				t.Errorf("install --client %s wrote a secret into %s", ic.client, path)
			}
			mustCLI(t, env, "mcp", "uninstall", "--client", ic.client)
			if ours, _ := ic.entry(t, readFile(t, path)); ours != nil {
				t.Errorf("uninstall left the entry: %v", ours)
			}
		})
		t.Run(ic.client+" existing", func(t *testing.T) {
			env, home := installEnv(t)
			path := ic.path(home)
			putFile(t, path, ic.existing, 0o644)
			mustCLI(t, env, "mcp", "install", "--client", ic.client)
			first := readFile(t, path)
			token := strings.TrimSpace(string(readFile(t, filepath.Join(home, ".openprogram", "mcp_server_token"))))
			ours, other := ic.entry(t, first)
			checkOurs(t, ic.client, ours, token)
			if other != "/usr/bin/other" {
				t.Errorf("install lost the other server (command %q):\n%s", other, first)
			}
			for _, k := range ic.keep {
				if !strings.Contains(string(first), k) {
					t.Errorf("install lost %q:\n%s", k, first)
				}
			}
			bs := backups(t, path)
			if len(bs) != 1 || string(readFile(t, bs[0])) != ic.existing {
				t.Fatalf("backups = %v, want one holding the old file", bs)
			}

			r := runCLI(t, env, "mcp", "install", "--client", ic.client)
			if r.code != 0 || !strings.Contains(r.stderr, "nothing changed") {
				t.Errorf("second install = exit %d stderr %s, want 0 and nothing changed", r.code, r.stderr)
			}
			if got := readFile(t, path); string(got) != string(first) {
				t.Errorf("second install changed the file:\n%s\nwas:\n%s", got, first)
			}
			if got := backups(t, path); len(got) != 1 {
				t.Errorf("second install made another backup: %v", got)
			}

			mustCLI(t, env, "mcp", "uninstall", "--client", ic.client)
			after := readFile(t, path)
			if ours, other := ic.entry(t, after); ours != nil || other != "/usr/bin/other" {
				t.Errorf("uninstall: ours %v, other %q; want only ours gone", ours, other)
			}
			if ic.client == "vscode" && strings.Contains(string(after), "openprogram-") {
				t.Errorf("uninstall left our inputs:\n%s", after)
			}
			if string(after) != ic.existing {
				t.Errorf("install then uninstall did not give back the file:\n%s\nwant:\n%s", after, ic.existing)
			}
			if r := runCLI(t, env, "mcp", "uninstall", "--client", ic.client); r.code != 0 || !strings.Contains(r.stderr, "nothing changed") {
				t.Errorf("second uninstall = exit %d stderr %s, want 0 and nothing changed", r.code, r.stderr)
			}
		})
	}
}

// TestInstallDryRun: --dry-run prints a diff, writes nothing, and never
// shows a secret.
func TestInstallDryRun(t *testing.T) {
	for _, ic := range installClients {
		t.Run(ic.client, func(t *testing.T) {
			env, home := installEnv(t)
			path := ic.path(home)
			r := runCLI(t, env, "mcp", "install", "--client", ic.client, "--dry-run")
			if r.code != 0 || !strings.HasPrefix(r.stdout, "--- /dev/null\n+++ "+path+" (new file)\n") || !strings.Contains(r.stdout, "+") {
				t.Fatalf("install --dry-run = exit %d stdout %q stderr %s, want a diff that creates the file", r.code, r.stdout, r.stderr)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("install --dry-run wrote %s", path)
			}
			token := strings.TrimSpace(string(readFile(t, filepath.Join(home, ".openprogram", "mcp_server_token"))))
			if strings.Contains(r.stdout+r.stderr, token) || strings.Contains(r.stdout+r.stderr, "sk-test-key") {
				t.Errorf("install --dry-run printed a secret:\n%s", r.stdout)
			}
		})
	}
}

// TestDryRunLabelsExistingFile: a dry run over a file that exists labels
// the two sides of its diff as the file now and after the change, never
// as a new file.
func TestDryRunLabelsExistingFile(t *testing.T) {
	for _, ic := range installClients {
		t.Run(ic.client, func(t *testing.T) {
			env, home := installEnv(t)
			path := ic.path(home)
			putFile(t, path, ic.existing, 0o600)
			for _, verb := range []string{"install", "uninstall"} {
				if verb == "uninstall" {
					mustCLI(t, env, "mcp", "install", "--client", ic.client)
				}
				r := runCLI(t, env, "mcp", verb, "--client", ic.client, "--dry-run")
				want := "--- " + path + " (now)\n+++ " + path + " (after " + verb + ")\n"
				if r.code != 0 || !strings.HasPrefix(r.stdout, want) {
					t.Errorf("%s --dry-run over an existing file = exit %d stdout %q, want it to start with %q", verb, r.code, r.stdout, want)
				}
			}
		})
	}
}

// TestDryRunHidesWrittenSecrets: the diff of a dry run over an existing
// claude-desktop entry hides the secrets the old entry holds too, in
// install (the model key changed since) and in uninstall.
func TestDryRunHidesWrittenSecrets(t *testing.T) {
	env, home := installEnv(t)
	mustCLI(t, env, "mcp", "install", "--client", "claude-desktop")
	token := strings.TrimSpace(string(readFile(t, filepath.Join(home, ".openprogram", "mcp_server_token"))))
	newKey := slices.Clone(env)
	for i, e := range newKey {
		if strings.HasPrefix(e, "OPENAI_API_KEY=") {
			newKey[i] = "OPENAI_API_KEY=sk-test-key-4567"
		}
	}
	for _, args := range [][]string{
		{"mcp", "install", "--client", "claude-desktop", "--dry-run"},
		{"mcp", "uninstall", "--client", "claude-desktop", "--dry-run"},
	} {
		r := runCLI(t, newKey, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "-") {
			t.Fatalf("%v = exit %d stdout %q stderr %s, want a diff", args, r.code, r.stdout, r.stderr)
		}
		for _, secret := range []string{token, "sk-test-key-0123", "sk-test-key-4567"} {
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("%v printed the secret %.10s…:\n%s", args, secret, r.stdout)
			}
		}
	}
}

// TestInstallRefusesBrokenFile: a file that does not parse is left alone.
func TestInstallRefusesBrokenFile(t *testing.T) {
	for _, ic := range installClients {
		t.Run(ic.client, func(t *testing.T) {
			env, home := installEnv(t)
			path := ic.path(home)
			broken := "{ [ not valid\n"
			putFile(t, path, broken, 0o600)
			r := runCLI(t, env, "mcp", "install", "--client", ic.client)
			if r.code != cli.ExitFailure || !strings.Contains(r.stderr, path) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("install over a broken file = exit %d stderr %q, want 1 and one line naming the file", r.code, r.stderr)
			}
			if got := string(readFile(t, path)); got != broken || len(backups(t, path)) != 0 {
				t.Errorf("install changed a file it could not parse")
			}
		})
	}
}

// TestInstallClaudeCode: with `claude` on PATH install runs it (removing a
// previous entry first); without, it prints the command.
func TestInstallClaudeCode(t *testing.T) {
	env, home := installEnv(t)
	r := runCLI(t, env, "mcp", "install", "--client", "claude-code")
	if r.code != 0 || !strings.Contains(r.stdout, "claude mcp add openprogram --scope user") || !strings.Contains(r.stderr, "not on PATH") {
		t.Fatalf("install without claude = exit %d stdout %q stderr %q, want the command and a hint", r.code, r.stdout, r.stderr)
	}

	bin := filepath.Join(home, "bin")
	log := filepath.Join(home, "claude.log")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		t.Fatal(err)
	}
	fakeClaude(t, bin, log)
	mustCLI(t, env, "mcp", "install", "--client", "claude-code", "--scope", "project")
	mustCLI(t, env, "mcp", "uninstall", "--client", "claude-code")
	// claude.cmd's echo ends its lines with CRLF.
	got := strings.Split(strings.TrimSpace(strings.ReplaceAll(string(readFile(t, log)), "\r\n", "\n")), "\n")
	want := []string{
		"mcp remove --scope project openprogram",
		"mcp add openprogram --scope project --env OPENPROGRAM_MCP_TOKEN=${OPENPROGRAM_MCP_TOKEN} --env OPENAI_API_KEY=${OPENAI_API_KEY} -- " + claudeExeArg + " mcp serve",
		"mcp remove --scope user openprogram",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claude invocations (-want +got):\n%s", diff)
	}
}

// TestInstallProjectScope: --scope project writes under the current
// directory; Claude Desktop has no project scope (usage error).
func TestInstallProjectScope(t *testing.T) {
	env, _ := installEnv(t)
	dir := t.TempDir()
	t.Chdir(dir)
	for client, rel := range map[string]string{"cursor": ".cursor/mcp.json", "vscode": ".vscode/mcp.json", "codex": ".codex/config.toml"} {
		mustCLI(t, env, "mcp", "install", "--client", client, "--scope", "project")
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
			t.Errorf("install --client %s --scope project: %v", client, err)
		}
	}
	if r := runCLI(t, env, "mcp", "install", "--client", "claude-desktop", "--scope", "project"); r.code != cli.ExitUsage {
		t.Errorf("install --client claude-desktop --scope project = exit %d, want 2", r.code)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{".codex", ".cursor", ".vscode"}; !slices.Equal(names, want) {
		t.Errorf("project dir holds %v, want %v", names, want)
	}
}
