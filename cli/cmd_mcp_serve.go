package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/runtime/builtin"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/tokenauth"
)

type mcpServeCmd struct {
	LogLevel  string `name:"log-level" env:"OPENPROGRAM_LOG_LEVEL" default:"info" enum:"debug,info,warn,error" help:"Least severe log records written: ${enum}."`
	LogFormat string `name:"log-format" env:"OPENPROGRAM_LOG_FORMAT" default:"text" enum:"text,json" help:"Log record format: ${enum}."`
	LogFile   bool   `name:"log-file" help:"Also append the log to mcp-serve.log in the state directory (mode 0600), for clients that hide stderr."`
}

// serveMemoryLimit is the soft limit (runtime/debug.SetMemoryLimit) of the
// Go heap while `mcp serve` runs: the garbage collector works harder near
// it, so the peak resident set stays under the contract's 256 MiB whatever
// a client pipelines (measured by cli/perf BenchmarkPipelinedBigLines).
const serveMemoryLimit = 96 << 20

// Run authenticates, then wires the store, runtime and MCP service and serves
// stdin/stdout until stdin ends. Nothing is read from stdin, and nothing is
// written to stdout, before authentication succeeds.
func (c mcpServeCmd) Run(ctx context.Context, app *App) error {
	dir, err := app.StateDir()
	if err != nil {
		return authFailed(app, err)
	}
	clientID, err := tokenauth.Authenticate(app.Env, tokenauth.Path(dir))
	if err != nil {
		return authFailed(app, err)
	}
	logger, closeLog, err := serveLogger(app, dir, c.LogLevel, c.LogFormat, c.LogFile)
	if err != nil {
		return err
	}
	defer closeLog()
	app.Logger = logger
	log := app.Logger.With("client_id", clientID)

	cfg, err := loadRunConfig(app.Env, dir)
	if err != nil {
		return err
	}
	principal, err := authz.LoadOrCreateOwnerPrincipal(dir)
	if err != nil {
		return fmt.Errorf("load the owner principal: %w", err)
	}
	authority, err := authz.MCPClientAuthority(clientID, principal)
	if err != nil {
		return fmt.Errorf("build the MCP client authority: %w", err)
	}
	rules, err := cfg.Rules()
	if err != nil {
		return fmt.Errorf("tools.permission_rules: %w", err)
	}
	st, err := openStore(ctx, app, cfg, dir)
	if err != nil {
		return err
	}
	defer st.Close()

	workDirs := cfg.Strings("agent.work_dirs")
	reg, err := newRegistry(st, builtin.Deps{WorkDirs: workDirs, StateDir: dir, Logger: log})
	if err != nil {
		return err
	}
	bus := events.NewBus(&events.BusOptions{Logger: log})
	defer bus.Close()
	qs := questions.New(&questions.Options{Bus: bus})
	rt, provErr := newRuntime(app, cfg, st, reg, bus, qs, log)
	if provErr != nil {
		log.Warn("no model provider: prompts will complete with failed:true", "why", provErr.Error())
	}
	srv, err := mcpserver.New(mcpserver.Options{
		Store:        st,
		Runtime:      rt, // mcpserver audits every denial, in turns too
		ClientID:     clientID,
		Authority:    authority,
		ExposedTools: cfg.Strings("mcp_server.exposed_tools"),
		Rules:        rules,
		WorkDirs:     workDirs,
		StateDir:     dir,
		Version:      app.Version,
		Logger:       app.Logger, // mcpserver adds client_id itself
	})
	if err != nil {
		return fmt.Errorf("start the MCP server: %w", err)
	}
	log.Info("mcp serve ready", "state_dir", dir, "store", storeKind(storeURL(app.Env, cfg, dir)))
	// A write to a closed stdout must fail with EPIPE, which ends the
	// connection cleanly: without a handler Go's runtime kills the process
	// with SIGPIPE on the first such write to fd 1. Notify (not Ignore) so
	// that child processes still start with SIGPIPE at its default.
	sigpipe := make(chan os.Signal, 1)
	signal.Notify(sigpipe, syscall.SIGPIPE)
	defer signal.Stop(sigpipe)
	// A soft limit on the Go heap keeps a client pipelining maximal lines
	// from growing the process through GC slack (GOMEMLIMIT overrides it).
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(serveMemoryLimit)
	}
	if err := srv.Serve(ctx, app.Stdin, app.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve MCP over stdio: %w", err)
	}
	return nil
}

// authFailed prints the one fixed line (and the cause, which never holds the
// token) and fails with exit status 1.
func authFailed(app *App, cause error) error {
	fmt.Fprintln(app.Stderr, "Error: MCP server authentication failed")
	fmt.Fprintf(app.Stderr, "cause: %s\n", oneLine(cause.Error()))
	return ExitError(ExitFailure)
}

func storeKind(u string) string {
	if strings.HasPrefix(u, "sqlite:") {
		return "sqlite"
	}
	return "postgres"
}
