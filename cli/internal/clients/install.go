package clients

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openprogram/openprogram/cli/internal/settings"
	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/internal/shell"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider/anthropic"
	"github.com/openprogram/openprogram/runtime/provider/openai"
	"github.com/openprogram/openprogram/tokenauth"
)

// Snippet is exactly what the user pastes to add the server to client: a
// JSON or TOML entry, or for Claude Code a shell command. Where it goes and
// how its secrets reach the server are its [Hints].
func Snippet(client string, l Launch) (string, error) {
	switch client {
	case "claude-code":
		return shell.Native.Join(append([]string{"claude"}, claudeAddArgs(l, "user")...)) + "\n", nil
	case "codex":
		return codexTable(l), nil
	}
	top, entry, inputs := jsonEntry(client, l, secretPlaceholder)
	data, err := encodeJSON(jsonDoc(top, entry, inputs), "", "  ")
	if err != nil {
		return "", err
	}
	return string(data) + "\n", nil
}

// secretPlaceholder is what a snippet holds where a literal secret goes.
func secretPlaceholder(name string) string {
	if name == tokenauth.EnvVar {
		return tokenPlaceholder
	}
	return "<paste the value of " + name + ">"
}

// Hints are the lines that say where the configuration of client goes
// (unless installed: install put it there) and how its secrets reach the
// server.
func Hints(env settings.Env, client string, l Launch, installed bool) []string {
	name := titles[client]
	var hints []string
	if !installed {
		where := ""
		switch client {
		case "claude-code":
			where = "Run this command in a shell (it adds the server for every project; use --scope project for one)."
		case "vscode":
			where = "Paste into .vscode/mcp.json in a workspace, or the user mcp.json (command: MCP: Open User Configuration)."
		default:
			path, _ := configPath(env, client, "user")
			where = "Paste into " + path + ", next to any servers already there."
		}
		hints = append(hints, where+" Or let `openprogram mcp install --client "+client+"` do it.")
	}
	vars := strings.Join(l.secrets, " and ")
	exports := TokenExport(tokenauth.Path(l.stateDir))
	for _, s := range l.secrets[1:] {
		exports += "; " + shell.Native.Export(s, shell.Native.Quote("<key>"))
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
		hints = append(hints, "VS Code asks for "+vars+" the first time it starts the server and keeps them in its secret storage (the token is in "+tokenauth.Path(l.stateDir)+").")
	default:
		hints = append(hints, name+" passes "+vars+" from its own environment: in the shell profile it starts from, "+exports)
	}
	return hints
}

// Target is what install and uninstall act on.
type Target struct {
	// Client is one of [Names].
	Client string
	// Scope is "user" (the client's user configuration, every project) or
	// "project" (the current directory's).
	Scope string
	// DryRun shows the change as a diff (or the commands) and writes
	// nothing.
	DryRun bool
}

// Installer merges our entry into a client's configuration file and takes
// it out: atomically, after a timestamped backup, keeping other servers,
// unknown keys and comments, and doing nothing when nothing changes. Claude
// Code's configuration is changed by its own `claude mcp` command instead.
type Installer struct {
	// Stdout takes what the user acts on: a dry run's diff, the claude
	// commands to run.
	Stdout io.Writer
	// Stderr takes what changed, where the backup is, and the hints.
	Stderr io.Writer
	// Env is the environment: HOME (on Windows USERPROFILE and APPDATA),
	// XDG_CONFIG_HOME and CODEX_HOME find the files, PATH (and on Windows
	// PATHEXT) finds claude, and Claude Desktop's file gets the model key's
	// value from it.
	Env settings.Env
}

// Install merges the entry that starts l into t's configuration file. A
// client and scope with no such file is a [*TargetError].
func (in Installer) Install(ctx context.Context, t Target, l Launch) error {
	if t.Client == "claude-code" {
		return in.runClaude(ctx, t.DryRun, [][]string{claudeRemoveArgs(t.Scope), claudeAddArgs(l, t.Scope)}, func() {
			in.printHints(t.Client, l)
		})
	}
	path, old, mode, err := in.readFile(t)
	if err != nil {
		return err
	}
	crlfFile := isCRLF(old)
	text := toLF(old, crlfFile)
	var updated []byte
	var literals []string // secret values written into the file
	if t.Client == "codex" {
		updated, err = upsertTOML(text, codexTable(l))
	} else {
		values := map[string]string{}
		if t.Client == "claude-desktop" {
			if values, err = in.literalSecrets(l); err != nil {
				return err
			}
			literals = append(slices.Collect(maps.Values(values)), writtenSecrets(t.Client, old)...)
		}
		top, entry, inputs := jsonEntry(t.Client, l, func(name string) string { return values[name] })
		updated, err = upsertJSON(text, top, entry, inputs)
	}
	done, err := in.applyFile("install", path, old, withEOL(updated, crlfFile), err, mode, t.DryRun, literals,
		"openprogram is already installed in "+path+"; nothing changed",
		"installed openprogram in "+path+"; restart "+titles[t.Client]+" to load it")
	if !done {
		return err
	}
	in.printHints(t.Client, l)
	return nil
}

// printHints prints the hints of an installed client on Stderr.
func (in Installer) printHints(client string, l Launch) {
	for _, h := range Hints(in.Env, client, l, true) {
		fmt.Fprintln(in.Stderr, h)
	}
}

// Uninstall removes our entry (and only it) from t's configuration file.
// cfg, when not nil, names the model key whose VS Code input goes with it.
// A client and scope with no such file is a [*TargetError].
func (in Installer) Uninstall(ctx context.Context, t Target, cfg *settings.Config) error {
	if t.Client == "claude-code" {
		return in.runClaude(ctx, t.DryRun, [][]string{claudeRemoveArgs(t.Scope)}, nil)
	}
	path, old, mode, err := in.readFile(t)
	if err != nil {
		return err
	}
	crlfFile := isCRLF(old)
	text := toLF(old, crlfFile)
	var updated []byte
	if t.Client == "codex" {
		updated, err = removeTOML(text)
	} else {
		top, _, _ := jsonEntry(t.Client, Launch{}, secretPlaceholder)
		var ids []string
		if t.Client == "vscode" {
			ids = []string{vscodeInputID(tokenauth.EnvVar), vscodeInputID(openai.DefaultKeyEnv), vscodeInputID(anthropic.DefaultKeyEnv)}
			if cfg != nil {
				if k := runtime.KeyEnv(cfg.Model); k != "" {
					ids = append(ids, vscodeInputID(k))
				}
			}
		}
		updated, err = removeJSON(text, top, ids)
	}
	_, err = in.applyFile("uninstall", path, old, withEOL(updated, crlfFile), err, mode, t.DryRun, writtenSecrets(t.Client, old),
		"openprogram is not in "+path+"; nothing changed",
		"removed openprogram from "+path+"; restart "+titles[t.Client])
	return err
}

// readFile reads the configuration file of the target client: its path,
// its bytes and its mode.
func (in Installer) readFile(t Target) (path string, old []byte, mode fs.FileMode, err error) {
	if path, err = configPath(in.Env, t.Client, t.Scope); err != nil {
		return "", nil, 0, err
	}
	old, mode, err = readFile(path)
	return path, old, mode, err
}

// readFile reads a client's configuration file (nil when missing) and its
// permission bits (0600 for a new file).
func readFile(path string) ([]byte, fs.FileMode, error) {
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
	if fi.Size() > maxFileBytes {
		return nil, 0, fmt.Errorf("%s is larger than %d bytes; edit it by hand", path, maxFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	return data, fi.Mode().Perm(), nil
}

// applyFile finishes install and uninstall: unless merging failed
// (mergeErr), it writes updated over path when it differs from old (a
// timestamped backup of the old file first, then an atomic replace) and
// says same or changed on stderr. With dryRun it prints the diff instead
// (its new side labelled "after <verb>"),
// each of literals shown as <redacted>. done reports a real write or a
// confirmed no-op, after which the caller may print its hints. mode is the
// old file's: what it is written with is always 0600.
func (in Installer) applyFile(verb, path string, old, updated []byte, mergeErr error, mode fs.FileMode, dryRun bool, literals []string, same, changed string) (done bool, err error) {
	if mergeErr != nil {
		return false, fmt.Errorf("update %s: %w; nothing was changed", path, mergeErr)
	}
	wrote, err := in.writeFile(verb, path, old, updated, dryRun, literals)
	if err != nil || dryRun {
		return false, err
	}
	if wrote {
		fmt.Fprintln(in.Stderr, changed)
		if old != nil && mode != privatefile.Mode {
			fmt.Fprintf(in.Stderr, "%s is now mode 0600 (it was %04o): a client's configuration may hold secrets\n", path, mode)
		}
		return true, nil
	}
	fmt.Fprintln(in.Stderr, same)
	if len(literals) > 0 {
		// The file holds secrets of ours; its client saved it open to others.
		if was, narrowed, err := privatefile.Restrict(path); err != nil {
			return false, fmt.Errorf("%s holds secrets and may be open to others: %w; run: %s", path, err, restrictCommand(path))
		} else if narrowed {
			fmt.Fprintf(in.Stderr, "%s is now mode 0600 (it was %04o): it holds secrets\n", path, was)
		}
	}
	return true, nil
}

// writeFile writes updated over path unless it equals old, or prints the
// diff on a dry run. The backup of old and the new file are both created
// 0600 (privatefile), whatever mode the old file had.
func (in Installer) writeFile(verb, path string, old, updated []byte, dryRun bool, literals []string) (changed bool, err error) {
	if string(old) == string(updated) {
		if dryRun {
			fmt.Fprintf(in.Stderr, "dry run: %s would not change\n", path)
		}
		return false, nil
	}
	if dryRun {
		from, to := path+" (now)", path+" (after "+verb+")"
		if old == nil {
			from, to = "/dev/null", path+" (new file)"
		}
		// The diff shows lines, not their endings.
		diff := unifiedDiff(from, to, toLF(old, isCRLF(old)), toLF(updated, isCRLF(updated)))
		for _, s := range literals {
			if s != "" {
				diff = strings.ReplaceAll(diff, s, "<redacted>")
			}
		}
		_, err := fmt.Fprint(in.Stdout, diff)
		fmt.Fprintf(in.Stderr, "dry run: nothing was written to %s\n", path)
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
		fmt.Fprintf(in.Stderr, "backup of the old file: %s\n", backup)
	}
	if err := replaceFile(path, updated); err != nil {
		return false, err
	}
	return true, nil
}

// literalSecrets reads the values Claude Desktop must hold literally: the
// stored token and the model key from this environment.
func (in Installer) literalSecrets(l Launch) (map[string]string, error) {
	values := map[string]string{}
	token, err := tokenauth.Read(tokenauth.Path(l.stateDir))
	if err != nil {
		return nil, fmt.Errorf("read the MCP server token (%w); run `openprogram mcp token create` first", err)
	}
	values[tokenauth.EnvVar] = token
	for _, s := range l.secrets[1:] {
		v := in.Env.Get(s)
		if v == "" {
			return nil, fmt.Errorf("claude-desktop needs the model key itself: %s in this shell and run again", shell.Native.Export(s, shell.Native.Literal("<key>")))
		}
		values[s] = v
	}
	return values, nil
}

// runClaude runs each argv with the `claude` found on PATH, or prints the
// commands when there is none (or on a dry run). The first of several
// commands may fail (removing an entry that is not there).
func (in Installer) runClaude(ctx context.Context, dryRun bool, argvs [][]string, after func()) error {
	claude := lookPath(in.Env, "claude")
	if claude == "" || dryRun {
		for _, argv := range argvs {
			fmt.Fprintln(in.Stdout, shell.Native.Join(append([]string{"claude"}, argv...)))
		}
		if dryRun {
			fmt.Fprintln(in.Stderr, "dry run: these commands would run")
		} else {
			fmt.Fprintln(in.Stderr, "claude is not on PATH: run the command(s) above where Claude Code is installed")
		}
		if after != nil {
			after()
		}
		return nil
	}
	for i, argv := range argvs {
		cmd := exec.CommandContext(ctx, claude, argv...)
		cmd.Env = in.Env
		cmd.Stdout, cmd.Stderr = in.Stderr, in.Stderr
		if err := cmd.Run(); err != nil && i == len(argvs)-1 {
			return fmt.Errorf("run %s: %w; the command was: %s", claude, err, shell.Native.Join(append([]string{"claude"}, argv...)))
		}
	}
	if after != nil {
		after()
	}
	return nil
}

// lookPath finds the program file (on Windows file.exe, file.cmd and the
// other PATHEXT forms: `claude` is claude.exe from its installer or
// claude.cmd from npm) in env's PATH, or "". Relative PATH entries are
// skipped.
func lookPath(env settings.Env, file string) string {
	for _, d := range filepath.SplitList(env.Get("PATH")) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		for _, name := range programNames(env, file) {
			if p := filepath.Join(d, name); IsProgram(p) {
				return p
			}
		}
	}
	return ""
}

// Installed lists the clients whose user configuration holds our entry
// (Claude Code's is claude's to know), for `mcp token rotate` to name.
func Installed(env settings.Env) []string {
	var found []string
	for _, client := range names {
		if client == "claude-code" {
			continue
		}
		path, err := configPath(env, client, "user")
		if err != nil {
			continue
		}
		data, _, err := readFile(path)
		if err != nil || data == nil {
			continue
		}
		var without []byte
		if client == "codex" {
			without, err = removeTOML(data)
		} else {
			top, _, _ := jsonEntry(client, Launch{}, secretPlaceholder)
			without, err = removeJSON(data, top, nil)
		}
		if err == nil && string(without) != string(data) {
			found = append(found, client)
		}
	}
	return found
}

// HoldsToken reports whether client's configuration holds the MCP token
// itself (Claude Desktop's: it passes no environment), so that after a
// rotation install must write the new one.
func HoldsToken(client string) bool { return client == "claude-desktop" }

// RotateAdvice is the line that says what to do in client, installed, once
// the token at tokenPath is replaced.
func RotateAdvice(client, tokenPath string) string {
	switch client {
	case "claude-desktop":
		return "claude-desktop: openprogram mcp install --client claude-desktop (its file holds the token)"
	case "vscode":
		return "vscode: clear the saved value of the " + vscodeInputID(tokenauth.EnvVar) + " input so VS Code asks again"
	}
	return client + ": " + TokenExport(tokenPath) + " where it starts"
}

// TokenExport is the line, in the syntax of this system's shell, that sets
// the MCP token variable from the token file at tokenPath.
func TokenExport(tokenPath string) string {
	sx := shell.Native
	return sx.Export(tokenauth.EnvVar, sx.FileContent(sx.Quote(tokenPath)))
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
