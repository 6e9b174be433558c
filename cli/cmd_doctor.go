package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/internal/console"
	"github.com/openprogram/openprogram/cli/internal/settings"
	"github.com/openprogram/openprogram/cli/internal/shell"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

type doctorCmd struct{}

// check is one doctor finding.
type check struct {
	name string
	ok   bool
	warn bool   // not fatal
	info string // what was found
	fix  string // how to fix it (when not ok)
}

// Run checks the installation and prints one line per check with a fix hint;
// it fails (exit 1) when any check fails.
func (doctorCmd) Run(ctx context.Context, app *App) error {
	var checks []check
	add := func(c check) { checks = append(checks, c) }

	dir, err := app.StateDir()
	if err != nil {
		add(check{name: "state directory", info: err.Error(), fix: "set OPENPROGRAM_HOME to a directory you own"})
		return report(app, checks)
	}
	add(stateDirCheck(dir))
	add(tokenCheck(app, dir))
	checks = append(checks, clientChecks(app, dir)...)
	add(ownerCheck(dir))

	cfgPath := filepath.Join(dir, settings.FileName)
	cfg, err := settings.Load(dir, settings.From{Env: app.Env, ModelEnv: true})
	if err != nil {
		add(check{name: "config", info: err.Error(), fix: "fix or remove " + cfgPath})
		return report(app, checks)
	}
	if _, err := os.Lstat(cfgPath); errors.Is(err, os.ErrNotExist) {
		add(check{name: "config", warn: true, info: cfgPath + " does not exist: every setting is its default",
			fix: "openprogram config set model.provider <openai|anthropic> (and model.name)"})
	} else {
		add(check{name: "config", ok: true, info: cfgPath})
	}

	add(modelCheck(ctx, app, cfg))
	// The loader checked every rule.
	add(check{name: "permission rules", ok: true, info: fmt.Sprintf("%d rules", cfg.Tools.PermissionRules.Len())})

	u := cfg.StoreURL
	// doctor reports, it does not install: no database, table or audit key
	// is created and no migration runs (the first mcp serve does that).
	st, err := inspectStore(ctx, app, cfg)
	switch {
	case errors.Is(err, sessions.ErrNoStore):
		add(check{name: "store", warn: true, info: "no store yet: " + err.Error(), fix: "the first `openprogram mcp serve` creates it"})
		return report(app, checks)
	case errors.Is(err, sessions.ErrMigrationsPending):
		add(check{name: "store", warn: true, info: "migrations pending: " + err.Error(), fix: "the next `openprogram mcp serve` runs them"})
		return report(app, checks)
	case err != nil:
		add(check{name: "store", info: err.Error(), fix: "check store.url / OPENPROGRAM_DATABASE_URL and that the database is reachable"})
		return report(app, checks)
	}
	defer st.Close()
	if _, err := st.ListSessions(ctx, 1); err != nil {
		add(check{name: "store", info: err.Error(), fix: "check the database"})
	} else {
		add(check{name: "store", ok: true, info: settings.StoreKind(u) + ", reachable and migrated"})
	}
	checks = append(checks, postgresChecks(ctx, st)...)
	keyPath := tokenauth.KeyPath(dir)
	if _, err := os.Lstat(keyPath); errors.Is(err, os.ErrNotExist) {
		add(check{name: "audit log", warn: true, info: "not checked: " + keyPath + " does not exist yet (the first mcp serve creates it; hosts sharing one PostgreSQL copy it from the first host)"})
	} else if rep, err := st.VerifyAudit(ctx, nil); err != nil {
		add(check{name: "audit log", info: err.Error(), fix: "check the database"})
	} else if !rep.OK {
		add(check{name: "audit log", info: fmt.Sprintf("broken at record %d: %s", rep.FirstBadID, rep.Problem), fix: "the audit log was edited outside openprogram; keep a copy of the database for investigation"})
	} else {
		add(check{name: "audit log", ok: true, info: fmt.Sprintf("%d records, keyed chain intact", rep.Records)})
	}

	reg, err := newRegistry(app, st, cfg)
	if err != nil {
		add(check{name: "runtime tools", info: err.Error()})
		return report(app, checks)
	}
	exposed := mcpserver.ResolveExposed(reg, cfg.MCPServer.ExposedTools)
	if len(exposed) == 0 {
		add(check{name: "exposed tools", ok: true, info: "none exposed to MCP clients (mcp_server.exposed_tools is [])"})
	}
	for _, e := range exposed {
		if e.Hidden == "" {
			add(check{name: "exposed tool " + e.Name, ok: true, info: "visible to MCP clients"})
		} else {
			add(check{name: "exposed tool " + e.Name, warn: true, info: e.Hidden, fix: "remove it from mcp_server.exposed_tools: MCP clients will not see it"})
		}
	}
	return report(app, checks)
}

func stateDirCheck(dir string) check {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return check{name: "state directory", info: dir + " does not exist", fix: "openprogram mcp token create (creates it with mode 0700)"}
	case err != nil:
		return check{name: "state directory", info: err.Error()}
	case fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir():
		return check{name: "state directory", info: dir + " is not a plain directory", fix: "point OPENPROGRAM_HOME at a real directory"}
	case fi.Mode().Perm()&0o077 != 0:
		return check{name: "state directory", info: fmt.Sprintf("%s has mode %04o", dir, fi.Mode().Perm()), fix: "chmod 700 " + dir}
	}
	return check{name: "state directory", ok: true, info: dir + " (0700)"}
}

func tokenCheck(app *App, dir string) check {
	path := tokenauth.Path(dir)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return check{name: "token", info: path + " does not exist", fix: "openprogram mcp token create"}
	}
	if app.Env.Get(tokenauth.EnvVar) == "" {
		// Check the file the same way serve does, with a value that cannot match,
		// so only a file problem can be reported.
		_, err := tokenauth.Authenticate([]string{tokenauth.EnvVar + "=\x00doctor"}, path)
		if err != nil && !errors.Is(err, tokenauth.ErrAuthFailed) {
			return check{name: "token", info: err.Error(), fix: tokenFileFix(path)}
		}
		return check{name: "token", ok: true, info: path + " (0600); " + tokenauth.EnvVar + " is not set in this shell, so it was not compared"}
	}
	id, err := tokenauth.Authenticate(app.Env, path)
	if errors.Is(err, tokenauth.ErrUnavailable) {
		return check{name: "token", info: err.Error(), fix: tokenFileFix(path)}
	}
	if err != nil {
		return check{name: "token", info: err.Error(), fix: "export " + tokenauth.EnvVar + `="$(cat ` + shell.Quote(path) + `)"`}
	}
	return check{name: "token", ok: true, info: "matches " + tokenauth.EnvVar + "; client id " + id}
}

// tokenFileFix is the exact, non-destructive command that repairs the token
// file at path (replacing the token would break every configured client).
func tokenFileFix(path string) string {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return "check " + path
	case fi.Mode()&os.ModeSymlink != 0:
		return "replace the symlink with the file itself: cp --remove-destination \"$(readlink -f " + shell.Quote(path) + ")\" " + shell.Quote(path)
	case !fi.Mode().IsRegular():
		return path + " must be a regular file; move it away and run openprogram mcp token create"
	case fi.Mode().Perm() != 0o600:
		return "chmod 600 " + shell.Quote(path)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return "chown " + strconv.Itoa(os.Getuid()) + " " + shell.Quote(path)
	}
	dir := filepath.Dir(path)
	if di, err := os.Lstat(dir); err == nil && di.Mode().Perm()&0o077 != 0 {
		return "chmod 700 " + shell.Quote(dir)
	}
	return "check " + path + " against the rules in the error above"
}

// modelProbeTimeout bounds doctor's request to the model endpoint.
const modelProbeTimeout = 8 * time.Second

// modelCheck builds the provider the way mcp serve does and sends it one
// tiny request, so doctor reports what a prompt would meet: the latency, or
// the exact failure.
func modelCheck(ctx context.Context, app *App, cfg *settings.Config) check {
	prov, err := cfg.Provider(app.Version, app.Env.Get)
	if err != nil {
		return check{name: "model provider", warn: true, info: err.Error(), fix: "prompts will complete with failed:true until the settings above are fixed"}
	}
	what := cfg.Model.Provider + " " + cfg.Model.Model
	if base := cfg.Model.BaseURL; base != "" {
		what += " at " + sessions.RedactURL(base)
	}
	pctx, cancel := context.WithTimeout(ctx, modelProbeTimeout)
	defer cancel()
	start := time.Now()
	_, err = prov.Stream(pctx, provider.Request{
		Model:     cfg.Model.Model,
		Messages:  []provider.Message{{Role: provider.RoleUser, Content: "Reply with the single word: ok"}},
		MaxTokens: 16,
	}, nil)
	elapsed := time.Since(start).Round(time.Millisecond)
	if err != nil {
		if pctx.Err() != nil {
			err = fmt.Errorf("no answer within %s: %w", modelProbeTimeout, err)
		}
		return check{name: "model provider", info: what + ": " + err.Error(),
			fix: "check model.base_url, model.name and the API key; prompts fail until this request succeeds"}
	}
	return check{name: "model provider", ok: true, info: fmt.Sprintf("%s answered a test request in %s", what, elapsed)}
}

func ownerCheck(dir string) check {
	path := filepath.Join(dir, authz.OwnerFileName)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return check{name: "owner principal", ok: true, info: "not created yet (mcp serve creates it)"}
	}
	id, err := authz.LoadOrCreateOwnerPrincipal(dir)
	if err != nil {
		return check{name: "owner principal", info: err.Error(), fix: "restore " + path + " from a backup; a new one changes the install's identity"}
	}
	return check{name: "owner principal", ok: true, info: id}
}

func report(app *App, checks []check) error {
	nameWidth := 22
	for _, c := range checks {
		nameWidth = max(nameWidth, len(c.name))
	}
	failed := 0
	for _, c := range checks {
		status := "ok  "
		switch {
		case c.ok:
		case c.warn:
			status = "warn"
		default:
			status = "FAIL"
			failed++
		}
		fmt.Fprintf(app.Stdout, "%s  %-*s %s\n", status, nameWidth, c.name, console.OneLine(c.info))
		if !c.ok && c.fix != "" {
			fmt.Fprintf(app.Stdout, "      %-*s fix: %s\n", nameWidth, "", c.fix)
		}
	}
	if failed > 0 {
		fmt.Fprintf(app.Stderr, "Error: %d check(s) failed; see the fix lines above\n", failed)
		return ExitError(ExitFailure)
	}
	return nil
}
