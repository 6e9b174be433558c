package clients

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"

	"github.com/openprogram/openprogram/cli/internal/settings"
)

// Installation is our entry as one client's user configuration holds it,
// read back for `doctor`.
type Installation struct {
	// Client is one of [Names]; Path is its file, Mode the file's
	// permission bits.
	Client, Path string
	Mode         fs.FileMode
	// Command is the program the client starts.
	Command string
	// Forward are the variables the client passes from its own
	// environment: those Codex lists in env_vars, then those the entry's
	// env names in the client's syntax (${NAME}, ${env:NAME}, {env:NAME},
	// $NAME), in the order of their keys.
	Forward []string
	// Literals are the entry's other env values, by variable, as the file
	// holds them (a VS Code ${input:...} among them).
	Literals map[string]string
	// HoldsSecrets reports whether the entry holds secrets literally
	// (Claude Desktop's, which takes no environment).
	HoldsSecrets bool
}

// forwardedVar matches an env value that names a variable of the client's
// own environment: ${NAME} (Claude Code), ${env:NAME} (Cursor), {env:NAME}
// (opencode), $NAME (Gemini CLI).
var forwardedVar = regexp.MustCompile(`^(?:\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}|\{env:([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*))$`)

// Installations reads our entry back from each client's user configuration
// (Claude Code's: ~/.claude.json, where `claude mcp add --scope user`
// writes it), in [Names] order. A client whose file is missing, unreadable
// or holds no entry of ours is left out.
func Installations(env settings.Env) []Installation {
	home, _ := userHome(env)
	var found []Installation
	for _, client := range names {
		path := filepath.Join(home, ".claude.json") // claude mcp add --scope user
		if client != "claude-code" {
			p, err := configPath(env, client, "user")
			if err != nil {
				continue
			}
			path = p
		}
		data, mode, err := readFile(path)
		if err != nil || data == nil {
			continue
		}
		e, ok := readEntry(client, data)
		if !ok {
			continue
		}
		in := Installation{Client: client, Path: path, Mode: mode, Command: e.command, Forward: e.forward,
			Literals: map[string]string{}, HoldsSecrets: len(writtenSecrets(client, data)) > 0}
		for _, k := range slices.Sorted(maps.Keys(e.env)) {
			if m := forwardedVar.FindStringSubmatch(e.env[k]); m != nil {
				in.Forward = append(in.Forward, m[1]+m[2]+m[3])
				continue
			}
			in.Literals[k] = e.env[k]
		}
		found = append(found, in)
	}
	return found
}

// entry is our entry in a client's configuration, whatever the client's
// format.
type entry struct {
	command string            // the program the client starts
	env     map[string]string // the values the entry sets
	forward []string          // variables forwarded by name (Codex env_vars)
}

// readEntry parses our entry out of a client's file data.
func readEntry(client string, data []byte) (entry, bool) {
	var e entry
	if client == "codex" {
		var doc struct {
			Servers map[string]struct {
				Command string            `toml:"command"`
				Env     map[string]string `toml:"env"`
				EnvVars []string          `toml:"env_vars"`
			} `toml:"mcp_servers"`
		}
		if toml.Unmarshal(data, &doc) != nil {
			return e, false
		}
		s, ok := doc.Servers[mcpServerName]
		return entry{command: s.Command, env: s.Env, forward: s.EnvVars}, ok
	}
	std, err := hujson.Standardize(bytes.Clone(data))
	if err != nil {
		return e, false
	}
	top := "mcpServers"
	if client != "claude-code" {
		top, _, _ = jsonEntry(client, Launch{}, secretPlaceholder)
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(std, &doc) != nil {
		return e, false
	}
	var servers map[string]struct {
		Command     json.RawMessage   `json:"command"`
		Env         map[string]string `json:"env"`
		Environment map[string]string `json:"environment"`
	}
	if json.Unmarshal(doc[top], &servers) != nil {
		return e, false
	}
	s, ok := servers[mcpServerName]
	if !ok {
		return e, false
	}
	var argv []string
	if json.Unmarshal(s.Command, &e.command) != nil && json.Unmarshal(s.Command, &argv) == nil && len(argv) > 0 {
		e.command = argv[0] // opencode: program and arguments in one list
	}
	e.env = s.Env
	if client == "opencode" {
		e.env = s.Environment
	}
	return e, true
}
