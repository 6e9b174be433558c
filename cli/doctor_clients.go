package cli

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"

	"github.com/openprogram/openprogram/tokenauth"
)

// clientEntry is what doctor reads back from our entry in a client's
// configuration, whatever the client's format.
type clientEntry struct {
	command string            // the program the client starts
	env     map[string]string // the values the entry sets
	forward []string          // variables forwarded by name (Codex env_vars)
}

// forwardedVar matches an env value that names a variable of the client's
// own environment: ${NAME} (Claude Code), ${env:NAME} (Cursor), {env:NAME}
// (opencode), $NAME (Gemini CLI).
var forwardedVar = regexp.MustCompile(`^(?:\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}|\{env:([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*))$`)

// clientChecks checks each client's user configuration that holds our
// entry: the binary it starts exists, a token it holds literally is the
// current one, and each variable it forwards is set here (doctor runs in
// the environment the user starts clients from, or should).
func clientChecks(app *App, stateDir string) []check {
	home := app.Env.Get("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	token, tokenErr := tokenauth.Read(tokenauth.Path(stateDir))
	var checks []check
	for _, client := range mcpClients {
		path := filepath.Join(home, ".claude.json") // claude mcp add --scope user
		if client != "claude-code" {
			p, err := clientConfigPath(app.Env, client, "user")
			if err != nil {
				continue
			}
			path = p
		}
		data, mode, err := readClientFile(path)
		if err != nil || data == nil {
			continue
		}
		e, ok := readClientEntry(client, data)
		if !ok {
			continue
		}
		if mode&0o077 != 0 && len(writtenSecrets(client, data)) > 0 {
			// Install wrote it 0600; the client saved it again under its umask.
			checks = append(checks, check{name: "client " + client,
				info: fmt.Sprintf("%s holds the MCP token (and any model key) and is mode %04o: other users can read them", path, mode),
				fix:  "chmod 600 " + shellQuote(path)})
			continue
		}
		checks = append(checks, clientCheck(app.Env, client, path, e, token, tokenErr == nil))
	}
	return checks
}

// clientCheck is the one finding for one installed client.
func clientCheck(env Env, client, path string, e clientEntry, token string, haveToken bool) check {
	name := "client " + client
	reinstall := "openprogram mcp install --client " + client
	if fi, err := os.Stat(e.command); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return check{name: name, info: path + " starts " + e.command + ", which is not an executable file",
			fix: "run " + reinstall + " with the openprogram binary you use now"}
	}
	forward := append([]string(nil), e.forward...)
	for _, k := range sortedKeys(e.env) {
		v := e.env[k]
		if m := forwardedVar.FindStringSubmatch(v); m != nil {
			forward = append(forward, m[1]+m[2]+m[3])
			continue
		}
		if k == tokenauth.EnvVar && haveToken && !strings.HasPrefix(v, "${input:") &&
			subtle.ConstantTimeCompare([]byte(v), []byte(token)) != 1 {
			return check{name: name, info: path + " holds an old MCP token (rotated since)", fix: "run " + reinstall}
		}
	}
	var unset []string
	for _, v := range forward {
		if env.Get(v) == "" {
			unset = append(unset, v)
		}
	}
	if len(unset) > 0 {
		var exports []string
		for _, v := range unset {
			if v == tokenauth.EnvVar {
				exports = append(exports, "export "+v+`="$(cat "$(openprogram mcp token path)")"`)
			} else {
				exports = append(exports, "export "+v+"=<value>")
			}
		}
		fix := "in the shell profile " + clientNames[client] + " starts from: " + strings.Join(exports, "; ")
		return check{name: name, warn: true, info: path + " forwards " + strings.Join(unset, ", ") + ", not set in this environment", fix: fix}
	}
	return check{name: name, ok: true, info: path + ": binary found, secrets current or forwarded"}
}

// readClientEntry parses our entry out of a client's file data.
func readClientEntry(client string, data []byte) (clientEntry, bool) {
	var e clientEntry
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
		return clientEntry{command: s.Command, env: s.Env, forward: s.EnvVars}, ok
	}
	std, err := hujson.Standardize(bytes.Clone(data))
	if err != nil {
		return e, false
	}
	top := "mcpServers"
	if client != "claude-code" {
		top, _, _ = jsonEntry(client, launch{}, secretPlaceholder)
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
