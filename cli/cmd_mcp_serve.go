package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/cli/internal/console"
	"github.com/openprogram/openprogram/cli/internal/settings"
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
// a client pipelines (measured by cli/perf BenchmarkPipelinedBigLines). It
// sits well above the live heap of one maximal request (about 70–100 MB):
// closer, the collector runs on nearly every allocation (at 96 MiB, 20
// maximal memory_update requests cost 27 s of CPU; at 128 MiB, 20 s).
const serveMemoryLimit = 128 << 20

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

	spawner := &taskSpawner{exe: app.Executable, stateDir: dir, env: app.Env, logLevel: c.LogLevel, logFormat: c.LogFormat, logger: log}
	defer spawner.close() // the standby runner, if any, exits
	opts := host.Options{Logger: log, StartTask: spawner.start, TaskEnded: spawner.ended}
	h, err := openHost(ctx, app, dir, opts)
	if err != nil {
		return err
	}
	defer h.Close()
	tc := h.Config().MCPServer.Tasks
	spawner.maxWorking, spawner.maxRunners = tc.MaxWorking, tc.MaxRunners
	// The sweep runs beside the connection, from the start: a store that is
	// slow to sweep never delays the answer to initialize.
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	go sweepTasks(sweepCtx, h, log, swept)
	defer func() { stopSweep(); <-swept }()
	if err := h.ProviderErr(); err != nil {
		log.Warn("no model provider: prompts will complete with failed:true", "why", err.Error())
	}
	srv, err := h.MCPServer(clientID, app.Logger) // mcpserver adds client_id itself
	if err != nil {
		return fmt.Errorf("start the MCP server: %w", err)
	}
	log.Info("mcp serve ready", "state_dir", dir, "store", settings.StoreKind(h.Config().StoreURL))
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
	fmt.Fprintf(app.Stderr, "cause: %s\n", console.OneLine(cause.Error()))
	return ExitError(ExitFailure)
}
