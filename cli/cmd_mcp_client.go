package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openprogram/openprogram/tokenauth"
)

type mcpCmd struct {
	Serve        mcpServeCmd        `cmd:"" help:"Serve the six OpenProgram tools over stdio (authenticates with OPENPROGRAM_MCP_TOKEN before reading stdin)."`
	Token        mcpTokenCmd        `cmd:"" help:"Manage the MCP server token."`
	ClientConfig mcpClientConfigCmd `cmd:"" name:"client-config" help:"Print the snippet that adds this server to an MCP client."`
}

type mcpTokenCmd struct {
	Create mcpTokenCreateCmd `cmd:"" help:"Create the MCP server token (once; it is never replaced) and print it."`
}

type mcpTokenCreateCmd struct{}

// Run creates <state>/mcp_server_token. Local only: no network, no server.
func (mcpTokenCreateCmd) Run(app *App) error {
	dir, err := app.StateDir()
	if err != nil {
		fmt.Fprintln(app.Stderr, "Error: could not create MCP server token")
		fmt.Fprintf(app.Stderr, "cause: %s\n", oneLine(err.Error()))
		return ExitError(ExitFailure)
	}
	token, err := tokenauth.Create(tokenauth.Path(dir))
	switch {
	case errors.Is(err, tokenauth.ErrExists):
		fmt.Fprintln(app.Stderr, "Error: MCP server token already exists")
		return ExitError(ExitFailure)
	case err != nil:
		fmt.Fprintln(app.Stderr, "Error: could not create MCP server token")
		fmt.Fprintf(app.Stderr, "cause: %s\n", oneLine(err.Error()))
		return ExitError(ExitFailure)
	}
	if _, err := fmt.Fprintln(app.Stdout, token); err != nil {
		return ExitError(ExitFailure)
	}
	return nil
}

// Clients client-config knows.
var mcpClients = []string{"claude-desktop", "claude-code", "cursor", "vscode", "codex"}

type mcpClientConfigCmd struct {
	Client string `name:"client" default:"claude-desktop" enum:"claude-desktop,claude-code,cursor,vscode,codex" help:"The client: ${enum}."`
}

// tokenPlaceholder stands where the user pastes the token; the real token is
// never printed by client-config.
const tokenPlaceholder = "<paste the token printed by: openprogram mcp token create>"

func (c *mcpClientConfigCmd) Run(app *App) error {
	exe := app.Executable
	if exe == "" {
		return errors.New("cannot find the path of the openprogram binary; run it by its absolute path")
	}
	dir, err := app.StateDir()
	if err != nil {
		return err
	}
	env := map[string]string{tokenauth.EnvVar: tokenPlaceholder}
	if !defaultStateDir(app.Env, dir) {
		env[EnvHome] = dir
	}
	snippet, err := clientSnippet(c.Client, exe, env)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(app.Stdout, snippet)
	return err
}

// clientSnippet renders the configuration that makes client start
// `<exe> mcp serve` with env.
func clientSnippet(client, exe string, env map[string]string) (string, error) {
	args := []string{"mcp", "serve"}
	switch client {
	case "claude-desktop", "cursor":
		where := "claude_desktop_config.json (Settings > Developer > Edit Config)"
		if client == "cursor" {
			where = "~/.cursor/mcp.json (or .cursor/mcp.json in a project)"
		}
		doc := map[string]any{"mcpServers": map[string]any{"openprogram": map[string]any{
			"command": exe, "args": args, "env": env,
		}}}
		return withHeader("Add to "+where+":", doc)
	case "vscode":
		vsEnv := map[string]string{}
		for k, v := range env {
			vsEnv[k] = v
		}
		vsEnv[tokenauth.EnvVar] = "${input:openprogram-mcp-token}"
		doc := map[string]any{
			"inputs": []any{map[string]any{
				"type": "promptString", "id": "openprogram-mcp-token",
				"description": "OpenProgram MCP server token", "password": true,
			}},
			"servers": map[string]any{"openprogram": map[string]any{
				"type": "stdio", "command": exe, "args": args, "env": vsEnv,
			}},
		}
		return withHeader("Add to .vscode/mcp.json (VS Code asks for the token once and stores it securely):", doc)
	case "claude-code":
		var b strings.Builder
		b.WriteString("# Run in a shell (replace the placeholder with your token):\n")
		b.WriteString("claude mcp add openprogram")
		for _, k := range sortedKeys(env) {
			b.WriteString(" --env " + shellQuote(k+"="+env[k]))
		}
		b.WriteString(" -- " + shellQuote(exe))
		for _, a := range args {
			b.WriteString(" " + a)
		}
		b.WriteString("\n")
		return b.String(), nil
	case "codex":
		var b strings.Builder
		b.WriteString("# Add to ~/.codex/config.toml:\n")
		b.WriteString("[mcp_servers.openprogram]\n")
		b.WriteString("command = " + tomlQuote(exe) + "\n")
		b.WriteString(`args = ["mcp", "serve"]` + "\n")
		b.WriteString("env = { ")
		for i, k := range sortedKeys(env) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k + " = " + tomlQuote(env[k]))
		}
		b.WriteString(" }\n")
		return b.String(), nil
	}
	return "", usagef("unknown client %q: use one of %s", client, strings.Join(mcpClients, ", "))
}

func withHeader(header string, doc any) (string, error) {
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode client config: %w", err)
	}
	return "// " + header + "\n" + string(data) + "\n", nil
}

func sortedKeys(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '-' || r == '_' || r == '.' || r == '=' || r == ':' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tomlQuote renders s as a TOML basic string: quotes and backslashes escaped,
// control characters as \uXXXX (Go's strconv.Quote escapes are not TOML).
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
