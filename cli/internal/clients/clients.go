// Package clients knows the seven MCP clients openprogram installs itself
// into: where each keeps its configuration, how it passes secrets to a
// server it starts, how our entry looks in its format, and how to merge that
// entry into its file (or take it out) keeping everything else. `mcp
// client-config` prints the entry ([Snippet], [Hints]); `mcp install` and
// `mcp uninstall` change the file ([Installer]); `doctor` reads back what is
// installed ([Installations]).
package clients

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/openprogram/openprogram/cli/internal/settings"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/tokenauth"
)

// names are the clients client-config, install and uninstall know, in help
// order.
var names = []string{"claude-desktop", "claude-code", "cursor", "vscode", "codex", "opencode", "gemini"}

// titles name the clients for messages.
var titles = map[string]string{
	"claude-desktop": "Claude Desktop", "claude-code": "Claude Code", "cursor": "Cursor", "vscode": "VS Code", "codex": "Codex",
	"opencode": "opencode", "gemini": "Gemini CLI",
}

// Names returns the clients, in help order.
func Names() []string { return slices.Clone(names) }

// Title is client's name as people write it ("Claude Desktop").
func Title(client string) string { return titles[client] }

// mcpServerName is the name of our entry in every client's configuration.
const mcpServerName = "openprogram"

// codexToolTimeoutSec is the tool timeout the Codex entry asks for: a
// prompt_send turn can take minutes, and Codex's default cuts it at 60 s.
const codexToolTimeoutSec = 600

// geminiTimeoutMS is the request timeout the Gemini CLI entry asks for, the
// same 600 s as Codex's (Gemini's own default today, written down so a
// lower default cannot cut a long prompt_send).
const geminiTimeoutMS = codexToolTimeoutSec * 1000

// tokenPlaceholder stands where the user pastes the token in a snippet for a
// client that can only hold literal values; the real token is never printed
// by client-config.
const tokenPlaceholder = "<paste the token printed by: openprogram mcp token create>"

// Launch is what a client needs to start `openprogram mcp serve`.
type Launch struct {
	exe      string
	stateDir string
	home     string // OPENPROGRAM_HOME for the server; "" when the state dir is the default
	// secrets are the environment variables the server needs from the
	// client: the MCP token's, then the model key's when the configured
	// provider needs one.
	secrets []string
}

var serveArgs = []string{"mcp", "serve"}

// NewLaunch is the launch of the binary at the absolute path exe with the
// state directory and model key variable of cfg; the state directory is
// left out of the entry when it is what env chooses by default.
func NewLaunch(exe string, env settings.Env, cfg *settings.Config) Launch {
	l := Launch{exe: exe, stateDir: cfg.StateDir, secrets: []string{tokenauth.EnvVar}}
	if !settings.IsDefaultStateDir(env, cfg.StateDir) {
		l.home = cfg.StateDir
	}
	if key := runtime.KeyEnv(cfg.Model); key != "" {
		l.secrets = append(l.secrets, key)
	}
	return l
}

// plainEnv is the environment entry every client gets literally.
func (l Launch) plainEnv() map[string]string {
	env := map[string]string{}
	if l.home != "" {
		env[settings.EnvHome] = l.home
	}
	return env
}

// vscodeInputID names the VS Code input that asks for secret name.
func vscodeInputID(name string) string {
	if name == tokenauth.EnvVar {
		return "openprogram-mcp-token"
	}
	return "openprogram-" + strings.ToLower(strings.ReplaceAll(name, "_", "-"))
}

// jsonServer is our entry in a JSON client configuration, fields in the
// order a reader expects.
type jsonServer struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Timeout int               `json:"timeout,omitempty"` // Gemini CLI, in ms
}

// opencodeServer is our entry in opencode's configuration: a local server
// whose command is one list, program first.
type opencodeServer struct {
	Type        string            `json:"type"`
	Command     []string          `json:"command"`
	Enabled     bool              `json:"enabled"`
	Environment map[string]string `json:"environment"`
}

// vscodeInput is a VS Code input variable that asks for a secret.
type vscodeInput struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	Description string `json:"description"`
	Password    bool   `json:"password"`
}

// jsonEntry is our entry for a client with a JSON configuration: the key of
// the object that holds servers, the entry, and (VS Code) the inputs it uses.
// secretValue gives the literal value of a secret for clients that can only
// hold literals (Claude Desktop).
func jsonEntry(client string, l Launch, secretValue func(name string) string) (top string, server any, inputs []vscodeInput) {
	entry := jsonServer{Command: l.exe, Args: serveArgs, Env: l.plainEnv()}
	switch client {
	case "claude-desktop":
		for _, s := range l.secrets {
			entry.Env[s] = secretValue(s)
		}
		return "mcpServers", entry, nil
	case "cursor":
		entry.Type = "stdio"
		for _, s := range l.secrets {
			entry.Env[s] = "${env:" + s + "}"
		}
		return "mcpServers", entry, nil
	case "vscode":
		entry.Type = "stdio"
		for _, s := range l.secrets {
			id := vscodeInputID(s)
			entry.Env[s] = "${input:" + id + "}"
			desc := "OpenProgram MCP server token"
			if s != tokenauth.EnvVar {
				desc = "API key for OpenProgram's model (" + s + ")"
			}
			inputs = append(inputs, vscodeInput{Type: "promptString", ID: id, Description: desc, Password: true})
		}
		return "servers", entry, inputs
	case "gemini":
		// Gemini CLI hides every inherited variable named like a secret
		// (*TOKEN*, *KEY*) from the servers it starts unless the entry
		// names it in env, where $NAME expands from Gemini's environment.
		for _, s := range l.secrets {
			entry.Env[s] = "$" + s
		}
		entry.Timeout = geminiTimeoutMS
		return "mcpServers", entry, nil
	case "opencode":
		// {env:NAME} is opencode's substitution from its own environment.
		oc := opencodeServer{Type: "local", Command: append([]string{l.exe}, serveArgs...), Enabled: true, Environment: l.plainEnv()}
		for _, s := range l.secrets {
			oc.Environment[s] = "{env:" + s + "}"
		}
		return "mcp", oc, nil
	}
	panic("jsonEntry: not a JSON client: " + client)
}

// writtenSecrets returns the secrets our entry holds in a client's file
// data: only claude-desktop's entry holds them literally, as every env
// value but EnvHome's. A dry run hides them in the diff's old lines as it
// does the new ones. A file that does not parse holds none of ours.
func writtenSecrets(client string, data []byte) []string {
	if client != "claude-desktop" || len(data) == 0 {
		return nil
	}
	std, err := hujson.Standardize(bytes.Clone(data))
	if err != nil {
		return nil
	}
	var f struct {
		Servers map[string]struct {
			Env map[string]any `json:"env"`
		} `json:"mcpServers"`
	}
	if json.Unmarshal(std, &f) != nil {
		return nil
	}
	var out []string
	for name, v := range f.Servers[mcpServerName].Env {
		if s, ok := v.(string); ok && name != settings.EnvHome && s != "" {
			out = append(out, s)
		}
	}
	return out
}

// codexTable is our [mcp_servers.openprogram] table for Codex: secrets are
// forwarded from Codex's environment by name (env_vars), never written.
func codexTable(l Launch) string {
	var b strings.Builder
	b.WriteString("[mcp_servers." + mcpServerName + "]\n")
	b.WriteString("command = " + tomlQuote(l.exe) + "\n")
	b.WriteString("args = " + tomlList(serveArgs) + "\n")
	b.WriteString("env_vars = " + tomlList(l.secrets) + "\n")
	fmt.Fprintf(&b, "tool_timeout_sec = %d\n", codexToolTimeoutSec)
	if l.home != "" {
		b.WriteString("env = { " + settings.EnvHome + " = " + tomlQuote(l.home) + " }\n")
	}
	return b.String()
}

func tomlList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = tomlQuote(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// claudeAddArgs are the arguments of `claude` that add our server in scope.
// Secrets are passed as ${NAME}, which Claude Code expands from its own
// environment when it starts the server, so no secret reaches the shell's
// history or the file.
//
// The name comes first: --env takes every following word up to the next
// option, so a name after it would be read as one more variable (Claude
// Code then fails with "Invalid environment variable format").
func claudeAddArgs(l Launch, scope string) []string {
	args := []string{"mcp", "add", mcpServerName, "--scope", scope}
	plain := l.plainEnv()
	for _, k := range slices.Sorted(maps.Keys(plain)) {
		args = append(args, "--env", k+"="+plain[k])
	}
	for _, s := range l.secrets {
		args = append(args, "--env", s+"=${"+s+"}")
	}
	args = append(args, "--", l.exe)
	return append(args, serveArgs...)
}

func claudeRemoveArgs(scope string) []string {
	return []string{"mcp", "remove", "--scope", scope, mcpServerName}
}

// clientProjectFiles are the clients' project configuration files, relative
// to the current directory.
var clientProjectFiles = map[string]string{
	"cursor": ".cursor/mcp.json", "vscode": ".vscode/mcp.json", "opencode": "opencode.json",
	"gemini": ".gemini/settings.json", "codex": ".codex/config.toml",
}

// TargetError is a client and scope that have no configuration file to
// change: a mistake in what was asked for (a usage error on the command
// line).
type TargetError struct{ msg string }

func (e *TargetError) Error() string { return e.msg }

// configPath is the file install and uninstall change for client in scope
// ("user" or "project"); project files are under the current directory.
func configPath(env settings.Env, client, scope string) (string, error) {
	home, err := userHome(env)
	if err != nil {
		return "", err
	}
	if scope == "project" {
		if client == "claude-desktop" {
			return "", &TargetError{"claude-desktop has no project configuration: use --scope user"}
		}
		if rel, ok := clientProjectFiles[client]; ok {
			wd, err := os.Getwd()
			if err != nil {
				return "", fmt.Errorf("find the current directory: %w", err)
			}
			return filepath.Join(wd, filepath.FromSlash(rel)), nil
		}
	} else {
		switch client {
		case "claude-desktop":
			return filepath.Join(userConfigDir(env, home), "Claude", "claude_desktop_config.json"), nil
		case "cursor":
			return filepath.Join(home, ".cursor", "mcp.json"), nil
		case "vscode":
			return filepath.Join(userConfigDir(env, home), "Code", "User", "mcp.json"), nil
		case "opencode":
			return filepath.Join(xdgConfigHome(env, home), "opencode", "opencode.json"), nil
		case "gemini":
			return filepath.Join(home, ".gemini", "settings.json"), nil
		case "codex":
			if ch := env.Get("CODEX_HOME"); ch != "" {
				return filepath.Join(ch, "config.toml"), nil
			}
			return filepath.Join(home, ".codex", "config.toml"), nil
		}
	}
	return "", &TargetError{fmt.Sprintf("unknown client %q: use one of %s", client, strings.Join(names, ", "))}
}

// userHome is the user's home directory: settings.HomeVar from env (HOME,
// on Windows %USERPROFILE%), else what the system says.
func userHome(env settings.Env) (string, error) {
	if home := env.Get(settings.HomeVar); home != "" {
		return home, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home directory: %w; set %s", err, settings.HomeVar)
	}
	return home, nil
}

// xdgConfigHome is XDG_CONFIG_HOME from env, else ~/.config, on every
// system (opencode keeps its configuration there on macOS and Windows too).
func xdgConfigHome(env settings.Env, home string) string {
	if x := env.Get("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return x
	}
	return filepath.Join(home, ".config")
}

// encodeJSON renders v indented (each line after the first prefixed), with
// <, > and & kept as they are.
func encodeJSON(v any, prefix, indent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, indent)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode client config: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
