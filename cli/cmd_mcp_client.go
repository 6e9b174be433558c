package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openprogram/openprogram/cli/internal/privatefile"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider/anthropic"
	"github.com/openprogram/openprogram/runtime/provider/openai"
	"github.com/openprogram/openprogram/tokenauth"
)

type mcpCmd struct {
	Serve        mcpServeCmd        `cmd:"" help:"Serve the six OpenProgram tools over stdio (authenticates with OPENPROGRAM_MCP_TOKEN before reading stdin)."`
	Token        mcpTokenCmd        `cmd:"" help:"Manage the MCP server token."`
	ClientConfig mcpClientConfigCmd `cmd:"" name:"client-config" help:"Print the configuration that adds this server to an MCP client (stdout: exactly what to paste; hints on stderr)."`
	Install      mcpInstallCmd      `cmd:"" help:"Add this server to an MCP client's configuration file (or run claude mcp add)."`
	Uninstall    mcpUninstallCmd    `cmd:"" help:"Remove this server from an MCP client's configuration file (or run claude mcp remove)."`
	RunTask      mcpRunTaskCmd      `cmd:"" name:"run-task" hidden:"" help:"Run one durable MCP task to its end (mcp serve starts it, detached)."`
}

// clientNames names the clients for messages.
var clientNames = map[string]string{
	"claude-desktop": "Claude Desktop", "claude-code": "Claude Code", "cursor": "Cursor", "vscode": "VS Code", "codex": "Codex",
	"opencode": "opencode", "gemini": "Gemini CLI",
}

type mcpClientConfigCmd struct {
	Client string `name:"client" default:"claude-desktop" enum:"claude-desktop,claude-code,cursor,vscode,codex,opencode,gemini" help:"The client: ${enum}."`
}

// Run prints exactly what the user pastes on stdout, and where it goes and
// how its secrets reach the server on stderr.
func (c *mcpClientConfigCmd) Run(app *App) error {
	l, dir, err := newLaunch(app)
	if err != nil {
		return err
	}
	var out string
	switch c.Client {
	case "claude-code":
		out = shellCommand(append([]string{"claude"}, claudeAddArgs(l, "user")...)) + "\n"
	case "codex":
		out = codexTable(l)
	default:
		top, entry, inputs := jsonEntry(c.Client, l, secretPlaceholder)
		data, err := encodeJSON(jsonDoc(top, entry, inputs), "", "  ")
		if err != nil {
			return err
		}
		out = string(data) + "\n"
	}
	if _, err := fmt.Fprint(app.Stdout, out); err != nil {
		return err
	}
	for _, h := range clientHints(app.Env, c.Client, l, dir, false) {
		fmt.Fprintln(app.Stderr, h)
	}
	return nil
}

// secretPlaceholder is what a snippet holds where a literal secret goes.
func secretPlaceholder(name string) string {
	if name == tokenauth.EnvVar {
		return tokenPlaceholder
	}
	return "<paste the value of " + name + ">"
}

// clientHints are the stderr lines that say where the configuration goes
// and how its secrets reach the server.
func clientHints(env Env, client string, l launch, stateDir string, installed bool) []string {
	name := clientNames[client]
	var hints []string
	if !installed {
		where := ""
		switch client {
		case "claude-code":
			where = "Run this command in a shell (it adds the server for every project; use --scope project for one)."
		case "vscode":
			where = "Paste into .vscode/mcp.json in a workspace, or the user mcp.json (command: MCP: Open User Configuration)."
		default:
			path, _ := clientConfigPath(env, client, "user")
			where = "Paste into " + path + ", next to any servers already there."
		}
		hints = append(hints, where+" Or let `openprogram mcp install --client "+client+"` do it.")
	}
	vars := strings.Join(l.secrets, " and ")
	exports := "export " + tokenauth.EnvVar + `="$(cat ` + shellQuote(tokenauth.Path(stateDir)) + `)"`
	for _, s := range l.secrets[1:] {
		exports += "; export " + s + "=<key>"
	}
	switch client {
	case "claude-desktop":
		if installed {
			hints = append(hints, "note: Claude Desktop passes no environment to the servers it starts, so the values of "+vars+
				" were written into the file (mode 0600); run this again after `openprogram mcp token rotate`. The release's .mcpb bundle keeps them out of the file: open it with Claude Desktop instead.")
		} else {
			hints = append(hints, "Claude Desktop passes no environment to the servers it starts: replace each <...> value with the real one.")
		}
	case "vscode":
		hints = append(hints, "VS Code asks for "+vars+" the first time it starts the server and keeps them in its secret storage (the token is in "+tokenauth.Path(stateDir)+").")
	default:
		hints = append(hints, name+" passes "+vars+" from its own environment: in the shell profile it starts from, "+exports)
	}
	return hints
}

// clientTarget is what install and uninstall act on.
type clientTarget struct {
	Client string `name:"client" required:"" enum:"claude-desktop,claude-code,cursor,vscode,codex,opencode,gemini" help:"The client: ${enum}."`
	Scope  string `name:"scope" default:"user" enum:"user,project" help:"user: every project (the client's user configuration); project: the current directory's (.cursor/, .vscode/, .codex/, .gemini/, opencode.json, .mcp.json)."`
	DryRun bool   `name:"dry-run" help:"Show the change as a diff (or the command) and write nothing."`
}

type mcpInstallCmd struct {
	clientTarget `embed:""`
}

// Run merges our entry into the client's configuration file.
func (c *mcpInstallCmd) Run(ctx context.Context, app *App) error {
	l, dir, err := newLaunch(app)
	if err != nil {
		return err
	}
	if c.Client == "claude-code" {
		return runClaude(ctx, app, c.DryRun, [][]string{claudeRemoveArgs(c.Scope), claudeAddArgs(l, c.Scope)}, func() {
			for _, h := range clientHints(app.Env, c.Client, l, dir, true) {
				fmt.Fprintln(app.Stderr, h)
			}
		})
	}
	path, old, mode, err := c.readFile(app)
	if err != nil {
		return err
	}
	var updated []byte
	var literals []string // secret values written into the file
	if c.Client == "codex" {
		updated, err = upsertTOML(old, codexTable(l))
	} else {
		values := map[string]string{}
		if c.Client == "claude-desktop" {
			if values, err = literalSecrets(app, dir, l); err != nil {
				return err
			}
			literals = append(slices.Collect(maps.Values(values)), writtenSecrets(c.Client, old)...)
		}
		top, entry, inputs := jsonEntry(c.Client, l, func(name string) string { return values[name] })
		updated, err = upsertJSON(old, top, entry, inputs)
	}
	done, err := applyClientFile(app, "install", path, old, updated, err, mode, c.DryRun, literals,
		"openprogram is already installed in "+path+"; nothing changed",
		"installed openprogram in "+path+"; restart "+clientNames[c.Client]+" to load it")
	if !done {
		return err
	}
	for _, h := range clientHints(app.Env, c.Client, l, dir, true) {
		fmt.Fprintln(app.Stderr, h)
	}
	return nil
}

// readFile reads the configuration file of the target client: its path,
// its bytes and its mode.
func (c *clientTarget) readFile(app *App) (path string, old []byte, mode fs.FileMode, err error) {
	if path, err = clientConfigPath(app.Env, c.Client, c.Scope); err != nil {
		return "", nil, 0, err
	}
	old, mode, err = readClientFile(path)
	return path, old, mode, err
}

type mcpUninstallCmd struct {
	clientTarget `embed:""`
}

// Run removes our entry (and only it) from the client's configuration.
func (c *mcpUninstallCmd) Run(ctx context.Context, app *App) error {
	if c.Client == "claude-code" {
		return runClaude(ctx, app, c.DryRun, [][]string{claudeRemoveArgs(c.Scope)}, nil)
	}
	path, old, mode, err := c.readFile(app)
	if err != nil {
		return err
	}
	var updated []byte
	if c.Client == "codex" {
		updated, err = removeTOML(old)
	} else {
		top, _, _ := jsonEntry(c.Client, launch{}, secretPlaceholder)
		var ids []string
		if c.Client == "vscode" {
			ids = []string{vscodeInputID(tokenauth.EnvVar), vscodeInputID(openai.DefaultKeyEnv), vscodeInputID(anthropic.DefaultKeyEnv)}
			if cfg, _, err := loadAppConfig(app); err == nil {
				if k := runtime.KeyEnv(cfg.Model); k != "" {
					ids = append(ids, vscodeInputID(k))
				}
			}
		}
		updated, err = removeJSON(old, top, ids)
	}
	_, err = applyClientFile(app, "uninstall", path, old, updated, err, mode, c.DryRun, writtenSecrets(c.Client, old),
		"openprogram is not in "+path+"; nothing changed",
		"removed openprogram from "+path+"; restart "+clientNames[c.Client])
	return err
}

// readClientFile reads a client's configuration file (nil when missing) and
// its permission bits (0600 for a new file).
func readClientFile(path string) ([]byte, fs.FileMode, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0o600, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("inspect %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file (a symlink?); edit it by hand", path)
	}
	if fi.Size() > maxClientFileBytes {
		return nil, 0, fmt.Errorf("%s is larger than %d bytes; edit it by hand", path, maxClientFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	return data, fi.Mode().Perm(), nil
}

// applyClientFile finishes install and uninstall: unless merging failed
// (mergeErr), it writes updated over path when it differs from old (a
// timestamped backup of the old file first, then an atomic replace) and
// says same or changed on stderr. With dryRun it prints the diff instead
// (its new side labelled "after <verb>"),
// each of literals shown as <redacted>. done reports a real write or a
// confirmed no-op, after which the caller may print its hints. mode is the
// old file's: what it is written with is always 0600.
func applyClientFile(app *App, verb, path string, old, updated []byte, mergeErr error, mode fs.FileMode, dryRun bool, literals []string, same, changed string) (done bool, err error) {
	if mergeErr != nil {
		return false, fmt.Errorf("update %s: %w; nothing was changed", path, mergeErr)
	}
	wrote, err := writeClientFile(app, verb, path, old, updated, dryRun, literals)
	if err != nil || dryRun {
		return false, err
	}
	if wrote {
		fmt.Fprintln(app.Stderr, changed)
		if old != nil && mode != privatefile.Mode {
			fmt.Fprintf(app.Stderr, "%s is now mode 0600 (it was %04o): a client's configuration may hold secrets\n", path, mode)
		}
		return true, nil
	}
	fmt.Fprintln(app.Stderr, same)
	if len(literals) > 0 {
		// The file holds secrets of ours; its client saved it open to others.
		if was, narrowed, err := privatefile.Restrict(path); err != nil {
			return false, fmt.Errorf("%s holds secrets and may be open to others: %w; run: chmod 600 %s", path, err, shellQuote(path))
		} else if narrowed {
			fmt.Fprintf(app.Stderr, "%s is now mode 0600 (it was %04o): it holds secrets\n", path, was)
		}
	}
	return true, nil
}

// writeClientFile writes updated over path unless it equals old, or prints
// the diff on a dry run. The backup of old and the new file are both
// created 0600 (privatefile), whatever mode the old file had.
func writeClientFile(app *App, verb, path string, old, updated []byte, dryRun bool, literals []string) (changed bool, err error) {
	if string(old) == string(updated) {
		if dryRun {
			fmt.Fprintf(app.Stderr, "dry run: %s would not change\n", path)
		}
		return false, nil
	}
	if dryRun {
		from, to := path+" (now)", path+" (after "+verb+")"
		if old == nil {
			from, to = "/dev/null", path+" (new file)"
		}
		diff := unifiedDiff(from, to, old, updated)
		for _, s := range literals {
			if s != "" {
				diff = strings.ReplaceAll(diff, s, "<redacted>")
			}
		}
		_, err := fmt.Fprint(app.Stdout, diff)
		fmt.Fprintf(app.Stderr, "dry run: nothing was written to %s\n", path)
		return true, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if old != nil {
		backup := path + ".bak-" + time.Now().UTC().Format("20060102T150405.000Z")
		if err := privatefile.CreateNew(backup, old); err != nil {
			return false, fmt.Errorf("back up %s: %w; nothing was changed", path, err)
		}
		fmt.Fprintf(app.Stderr, "backup of the old file: %s\n", backup)
	}
	if err := privatefile.Replace(path, updated); err != nil {
		return false, err
	}
	return true, nil
}

// literalSecrets reads the values Claude Desktop must hold literally: the
// stored token and the model key from this environment.
func literalSecrets(app *App, stateDir string, l launch) (map[string]string, error) {
	values := map[string]string{}
	token, err := tokenauth.Read(tokenauth.Path(stateDir))
	if err != nil {
		return nil, fmt.Errorf("read the MCP server token (%w); run `openprogram mcp token create` first", err)
	}
	values[tokenauth.EnvVar] = token
	for _, s := range l.secrets[1:] {
		v := app.Env.Get(s)
		if v == "" {
			return nil, fmt.Errorf("claude-desktop needs the model key itself: export %s=<key> in this shell and run again", s)
		}
		values[s] = v
	}
	return values, nil
}

// runClaude runs each argv with the `claude` found on PATH, or prints the
// commands when there is none (or on a dry run). The first of several
// commands may fail (removing an entry that is not there).
func runClaude(ctx context.Context, app *App, dryRun bool, argvs [][]string, after func()) error {
	claude := lookPath(app.Env, "claude")
	if claude == "" || dryRun {
		for _, argv := range argvs {
			fmt.Fprintln(app.Stdout, shellCommand(append([]string{"claude"}, argv...)))
		}
		if dryRun {
			fmt.Fprintln(app.Stderr, "dry run: these commands would run")
		} else {
			fmt.Fprintln(app.Stderr, "claude is not on PATH: run the command(s) above where Claude Code is installed")
		}
		if after != nil {
			after()
		}
		return nil
	}
	for i, argv := range argvs {
		cmd := exec.CommandContext(ctx, claude, argv...)
		cmd.Env = app.Env
		cmd.Stdout, cmd.Stderr = app.Stderr, app.Stderr
		if err := cmd.Run(); err != nil && i == len(argvs)-1 {
			return fmt.Errorf("run %s: %w; the command was: %s", claude, err, shellCommand(append([]string{"claude"}, argv...)))
		}
	}
	if after != nil {
		after()
	}
	return nil
}

// lookPath finds an executable named file in env's PATH, or "".
func lookPath(env Env, file string) string {
	for _, d := range filepath.SplitList(env.Get("PATH")) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, file)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
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
