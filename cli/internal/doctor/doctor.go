// Package doctor checks an openprogram installation and says how to fix
// what is wrong: the state directory and the token file, the clients that
// start the server, the owner principal, config.json, one real request to
// the model, the store (reachable and migrated; PostgreSQL's connections),
// the audit chain, and the tools exposed to MCP clients. Each finding is a
// [Check] with an exact, non-destructive fix; doctor creates, migrates and
// changes nothing.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/cli/internal/clients"
	"github.com/openprogram/openprogram/cli/internal/console"
	"github.com/openprogram/openprogram/cli/internal/settings"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

// Check is one finding.
type Check struct {
	// Name is what was checked ("state directory", "client cursor").
	Name string
	// OK: nothing to fix. Warn: something to fix that does not fail the
	// installation. Neither: a failure.
	OK, Warn bool
	// Info is what was found.
	Info string
	// Fix says how to fix it (when not OK).
	Fix string
}

// Options is what the checks read besides the files they check.
type Options struct {
	// Env is the environment: it chooses the state directory, holds the
	// token and model key to compare, and is where the clients' forwarded
	// variables should be set.
	Env settings.Env
	// Version is the build's, sent in the model request's User-Agent.
	Version string
	// Logger takes the store's diagnostics (nil: none).
	Logger *slog.Logger
}

// Run checks the installation, in order, and returns what it found; it
// stops at the first finding that the checks after it depend on (no state
// directory, a config.json that does not load, a store that cannot be
// opened).
func Run(ctx context.Context, opts Options) []Check {
	var checks []Check
	add := func(c Check) { checks = append(checks, c) }

	dir, err := settings.StateDir(opts.Env)
	if err != nil {
		add(Check{Name: "state directory", Info: err.Error(), Fix: "set OPENPROGRAM_HOME to a directory you own"})
		return checks
	}
	add(stateDirCheck(dir))
	add(tokenCheck(opts.Env, dir))
	checks = append(checks, clientChecks(opts.Env, dir)...)
	add(ownerCheck(dir))

	cfgPath := filepath.Join(dir, settings.FileName)
	cfg, err := settings.Load(dir, settings.From{Env: opts.Env, ModelEnv: true})
	if err != nil {
		add(Check{Name: "config", Info: err.Error(), Fix: "fix or remove " + cfgPath})
		return checks
	}
	if _, err := os.Lstat(cfgPath); errors.Is(err, os.ErrNotExist) {
		add(Check{Name: "config", Warn: true, Info: cfgPath + " does not exist: every setting is its default",
			Fix: "openprogram config set model.provider <openai|anthropic> (and model.name)"})
	} else {
		add(Check{Name: "config", OK: true, Info: cfgPath})
	}

	add(modelCheck(ctx, opts.Version, opts.Env, cfg))
	add(telemetryCheck(ctx, opts.Env, cfg))
	// The loader checked every rule.
	add(Check{Name: "permission rules", OK: true, Info: fmt.Sprintf("%d rules", cfg.Tools.PermissionRules.Len())})

	u := cfg.StoreURL
	// doctor reports, it does not install: no database, table or audit key
	// is created and no migration runs (the first mcp serve does that).
	st, err := host.OpenStore(ctx, cfg.StateDir, cfg.StoreURL, &host.StoreOptions{Inspect: true, Logger: opts.Logger})
	switch {
	case errors.Is(err, sessions.ErrNoStore):
		add(Check{Name: "store", Warn: true, Info: "no store yet: " + err.Error(), Fix: "the first `openprogram mcp serve` creates it"})
		return checks
	case errors.Is(err, sessions.ErrMigrationsPending):
		add(Check{Name: "store", Warn: true, Info: "migrations pending: " + err.Error(), Fix: "the next `openprogram mcp serve` runs them"})
		return checks
	case err != nil:
		add(Check{Name: "store", Info: err.Error(), Fix: "check store.url / OPENPROGRAM_DATABASE_URL and that the database is reachable"})
		return checks
	}
	defer st.Close()
	if _, err := st.ListSessions(ctx, 1); err != nil {
		add(Check{Name: "store", Info: err.Error(), Fix: "check the database"})
	} else {
		add(Check{Name: "store", OK: true, Info: settings.StoreKind(u) + ", reachable and migrated"})
	}
	checks = append(checks, postgresChecks(ctx, st)...)
	keyPath := tokenauth.KeyPath(dir)
	if _, err := os.Lstat(keyPath); errors.Is(err, os.ErrNotExist) {
		add(Check{Name: "audit log", Warn: true, Info: "not checked: " + keyPath + " does not exist yet (the first mcp serve creates it; hosts sharing one PostgreSQL copy it from the first host)"})
	} else if rep, err := st.VerifyAudit(ctx, nil); err != nil {
		add(Check{Name: "audit log", Info: err.Error(), Fix: "check the database"})
	} else if !rep.OK {
		add(Check{Name: "audit log", Info: fmt.Sprintf("broken at record %d: %s", rep.FirstBadID, rep.Problem), Fix: "the audit log was edited outside openprogram; keep a copy of the database for investigation"})
	} else {
		add(Check{Name: "audit log", OK: true, Info: fmt.Sprintf("%d records, keyed chain intact", rep.Records)})
	}

	reg, err := host.NewRegistry(st, cfg.Config, opts.Logger)
	if err != nil {
		add(Check{Name: "runtime tools", Info: err.Error()})
		return checks
	}
	exposed := mcpserver.ResolveExposed(reg, cfg.MCPServer.ExposedTools)
	if len(exposed) == 0 {
		add(Check{Name: "exposed tools", OK: true, Info: "none exposed to MCP clients (mcp_server.exposed_tools is [])"})
	}
	for _, e := range exposed {
		if e.Hidden == "" {
			add(Check{Name: "exposed tool " + e.Name, OK: true, Info: "visible to MCP clients"})
		} else {
			add(Check{Name: "exposed tool " + e.Name, Warn: true, Info: e.Hidden, Fix: "remove it from mcp_server.exposed_tools: MCP clients will not see it"})
		}
	}
	return checks
}

func stateDirCheck(dir string) Check {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Check{Name: "state directory", Info: dir + " does not exist", Fix: "openprogram mcp token create (creates it with mode 0700)"}
	case err != nil:
		return Check{Name: "state directory", Info: err.Error()}
	case fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir():
		return Check{Name: "state directory", Info: dir + " is not a plain directory", Fix: "point OPENPROGRAM_HOME at a real directory"}
	}
	if info, fix := dirProblem(dir, fi); info != "" {
		return Check{Name: "state directory", Info: info, Fix: fix}
	}
	return Check{Name: "state directory", OK: true, Info: dir + dirPrivateNote}
}

func tokenCheck(env settings.Env, dir string) Check {
	path := tokenauth.Path(dir)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return Check{Name: "token", Info: path + " does not exist", Fix: "openprogram mcp token create"}
	}
	if env.Get(tokenauth.EnvVar) == "" {
		// Check the file the same way serve does, with a value that cannot match,
		// so only a file problem can be reported.
		_, err := tokenauth.Authenticate([]string{tokenauth.EnvVar + "=\x00doctor"}, path)
		if err != nil && !errors.Is(err, tokenauth.ErrAuthFailed) {
			return Check{Name: "token", Info: err.Error(), Fix: tokenFileFix(path)}
		}
		return Check{Name: "token", OK: true, Info: path + " (0600); " + tokenauth.EnvVar + " is not set in this shell, so it was not compared"}
	}
	id, err := tokenauth.Authenticate(env, path)
	if errors.Is(err, tokenauth.ErrUnavailable) {
		return Check{Name: "token", Info: err.Error(), Fix: tokenFileFix(path)}
	}
	if err != nil {
		return Check{Name: "token", Info: err.Error(), Fix: clients.TokenExport(path)}
	}
	return Check{Name: "token", OK: true, Info: "matches " + tokenauth.EnvVar + "; client id " + id}
}

// tokenFileFix is the exact, non-destructive command that repairs the token
// file at path (replacing the token would break every configured client).
func tokenFileFix(path string) string {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return "check " + path
	case fi.Mode()&os.ModeSymlink != 0:
		return "replace the symlink with the file itself: " + linkFix(path)
	case !fi.Mode().IsRegular():
		return path + " must be a regular file; move it away and run openprogram mcp token create"
	}
	if fix := modeFix(fi, path); fix != "" {
		return fix
	}
	if fix := ownerFix(fi, path); fix != "" {
		return fix
	}
	dir := filepath.Dir(path)
	if di, err := os.Lstat(dir); err == nil {
		if _, fix := dirProblem(dir, di); fix != "" {
			return fix
		}
	}
	return "check " + path + " against the rules in the error above"
}

// telemetryProbeTimeout bounds doctor's test export to the collector.
const telemetryProbeTimeout = 5 * time.Second

// telemetryCheck says where telemetry goes (host.TelemetryTargetOf, as mcp
// serve decides it) and whether it arrives: one empty OTLP export to the
// collector. Off is fine; an unreachable collector or an unusable setting
// is a warning, as the server runs the same without it.
func telemetryCheck(ctx context.Context, env settings.Env, cfg *settings.Config) Check {
	target := host.TelemetryTargetOf(cfg.Telemetry, env.Get)
	switch {
	case target.Misconfigured:
		return Check{Name: "telemetry", Warn: true, Info: "off: " + target.Why, Fix: "set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (or unset it) and point the endpoint at the collector's OTLP/HTTP port (4318)"}
	case !target.On:
		return Check{Name: "telemetry", OK: true, Info: "off: " + target.Why}
	}
	where := fmt.Sprintf("traces to %s, metrics to %s (%s)", sessions.RedactURL(target.Traces), sessions.RedactURL(target.Metrics), target.Protocol)
	if target.Traces == "" {
		where = fmt.Sprintf("metrics to %s (%s)", sessions.RedactURL(target.Metrics), target.Protocol)
	}
	start := time.Now()
	if err := host.ProbeTelemetry(ctx, target, telemetryProbeTimeout); err != nil {
		return Check{Name: "telemetry", Warn: true, Info: where + ": " + err.Error(),
			Fix: "start the collector or fix OTEL_EXPORTER_OTLP_ENDPOINT / telemetry.endpoint; until then mcp serve drops its telemetry"}
	}
	return Check{Name: "telemetry", OK: true, Info: fmt.Sprintf("%s: the collector accepted a test export in %s", where, time.Since(start).Round(time.Millisecond))}
}

// modelProbeTimeout bounds doctor's request to the model endpoint.
const modelProbeTimeout = 8 * time.Second

// modelCheck builds the provider the way mcp serve does and sends it one
// tiny request, so doctor reports what a prompt would meet: the latency, or
// the exact failure.
func modelCheck(ctx context.Context, version string, env settings.Env, cfg *settings.Config) Check {
	prov, err := cfg.Provider(version, env.Get)
	if err != nil {
		return Check{Name: "model provider", Warn: true, Info: err.Error(), Fix: "prompts will complete with failed:true until the settings above are fixed"}
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
		return Check{Name: "model provider", Info: what + ": " + err.Error(),
			Fix: "check model.base_url, model.name and the API key; prompts fail until this request succeeds"}
	}
	return Check{Name: "model provider", OK: true, Info: fmt.Sprintf("%s answered a test request in %s", what, elapsed)}
}

func ownerCheck(dir string) Check {
	path := filepath.Join(dir, authz.OwnerFileName)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return Check{Name: "owner principal", OK: true, Info: "not created yet (mcp serve creates it)"}
	}
	id, err := authz.LoadOrCreateOwnerPrincipal(dir)
	if err != nil {
		return Check{Name: "owner principal", Info: err.Error(), Fix: "restore " + path + " from a backup; a new one changes the install's identity"}
	}
	return Check{Name: "owner principal", OK: true, Info: id}
}

// Print writes one line per check (status, name, what was found) and, under
// each that is not OK, its fix, to w; it returns how many checks failed.
func Print(w io.Writer, checks []Check) (failed int) {
	nameWidth := 22
	for _, c := range checks {
		nameWidth = max(nameWidth, len(c.Name))
	}
	for _, c := range checks {
		status := "ok  "
		switch {
		case c.OK:
		case c.Warn:
			status = "warn"
		default:
			status = "FAIL"
			failed++
		}
		fmt.Fprintf(w, "%s  %-*s %s\n", status, nameWidth, c.Name, console.OneLine(c.Info))
		if !c.OK && c.Fix != "" {
			fmt.Fprintf(w, "      %-*s fix: %s\n", nameWidth, "", c.Fix)
		}
	}
	return failed
}
