package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/openprogram/openprogram/cli/host"
)

// mcpRunTaskCmd is the detached runner of durable MCP tasks, started by
// `mcp serve` (taskSpawner) and by nothing else. It opens its host, then
// waits on its connection to that serve (task_channel.go: file descriptor
// 3, or on Windows its stdin and stdout) for the task it is handed, with
// the runner slots it holds while the task's turn runs (on Windows it
// takes them itself and answers before it reads the task),
// runs the turn with the authority of the client the task belongs to, and
// says on the connection that the task ended. The serve then keeps it as
// its standby (it gives its slots back and waits for the next task) or
// ends the connection, and it exits. It exits too when its serve goes away
// while it waits, and at once when its host does not open. It holds no
// token: the
// client id (not a secret) comes from the serve process that authenticated
// the client, and the host refuses it when that client is no longer the
// paired one.
type mcpRunTaskCmd struct {
	LogLevel  string `name:"log-level" default:"info" enum:"debug,info,warn,error" help:"Least severe log records written: ${enum}."`
	LogFormat string `name:"log-format" default:"text" enum:"text,json" help:"Log record format: ${enum}."`
}

// Run waits for tasks and runs them. It ignores SIGHUP (it has no
// terminal), and ends the task through its context on SIGTERM or SIGINT
// (cli's main).
func (c mcpRunTaskCmd) Run(ctx context.Context, app *App) error {
	signal.Ignore(syscall.SIGHUP)
	conn, err := standbyConn()
	if err != nil {
		return fmt.Errorf("mcp run-task is started by mcp serve, which passes its task on %s: %w", runnerChannelName, err)
	}
	return c.serve(ctx, app, conn)
}

// serve is Run on the runner's channel conn, which it closes.
func (c mcpRunTaskCmd) serve(ctx context.Context, app *App, conn runnerConn) error {
	defer conn.Close()
	dir, err := app.StateDir()
	if err != nil {
		return err
	}
	logger, closeLog, err := serveLogger(app, dir, c.LogLevel, c.LogFormat, false)
	if err != nil {
		return err
	}
	defer closeLog()
	app.Logger = logger
	// The host opens while the runner waits for its task: when the task
	// comes, the store is connected and the runtime built. A serve gone
	// before it hands one (the end of the connection) ends the wait, the
	// open and the process; so does SIGTERM.
	openCtx, stopOpen := context.WithCancel(ctx)
	defer stopOpen()
	handed := make(chan handoff, 1)
	go func() {
		hd := conn.receive()
		if hd.err != nil {
			stopOpen()
		}
		handed <- hd
	}()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			conn.Close()
		case <-done:
		}
	}()
	// The serve learns a task ended as soon as it is terminal in the
	// store, before its last record: tasks/result answers then.
	var reported string
	report := func(taskID string) {
		if reported != taskID {
			reported = taskID
			conn.reportEnd()
		}
	}
	h, herr := openHost(openCtx, app, dir, host.Options{Logger: logger, TaskFinished: report})
	if herr != nil {
		return c.noHost(ctx, openCtx, conn, handed, logger, herr)
	}
	defer h.Close()
	hd := <-handed
	for {
		if none, err := noTask(hd, logger); none {
			return err
		}
		// The runner holds its runner slots before it reads its task.
		if err := conn.hold(ctx, &hd, dir, h.Config().MCPServer.Tasks); err != nil {
			logger.Error("task runner failed", "client_id", hd.client, "task_id", hd.task, "error", err.Error())
			return err
		}
		c.run(ctx, h, logger, hd)
		// The turn is over: the serve learns the task ended (if it did not
		// yet: a task this runner could not claim), and either keeps this
		// runner as its standby, which gives its slots back and waits for
		// the next task, or ends the connection, and the runner exits with
		// its slots.
		report(hd.task)
		if !conn.kept() {
			return nil
		}
		for _, f := range hd.slots {
			f.Close()
		}
		hd = conn.receive()
	}
}

// noHost ends a runner whose host did not open (herr) at once, before it
// can be handed a task: it runs none, so its serve, which finds it gone,
// hands the next task to another runner. A task handed while the host
// opened is declined (on Windows the serve then fails it at once; on Unix
// the sweep fails it, unclaimed). A host open stopped because the serve
// went away, or the handoff failed, is that end, not a failure of the
// host.
func (c mcpRunTaskCmd) noHost(ctx, openCtx context.Context, conn runnerConn, handed <-chan handoff, logger *slog.Logger, herr error) error {
	var hd handoff
	select {
	case hd = <-handed:
	default:
		if openCtx.Err() == nil || ctx.Err() != nil {
			logger.Error("task runner: its host did not open; exiting before it is handed a task", "pid", os.Getpid(), "error", herr.Error())
			return herr
		}
		hd = <-handed // the channel's end stopped the open
	}
	if none, err := noTask(hd, logger); none {
		return err
	}
	conn.decline(herr)
	logger.Error("task runner failed", "client_id", hd.client, "task_id", hd.task, "error", herr.Error())
	return herr
}

// noTask reports whether hd hands no task: the serve went away (nil: the
// runner exits quietly) or the handoff failed (the error).
func noTask(hd handoff, logger *slog.Logger) (bool, error) {
	switch {
	case errors.Is(hd.err, io.EOF) || errors.Is(hd.err, net.ErrClosed):
		logger.Debug("task runner: no task was handed; exiting", "pid", os.Getpid())
		return true, nil
	case hd.err != nil:
		return true, fmt.Errorf("receive the task from mcp serve: %w", hd.err)
	}
	return false, nil
}

// run runs the task hd hands this runner to its end, and logs how it went.
func (c mcpRunTaskCmd) run(ctx context.Context, h *host.Host, logger *slog.Logger, hd handoff) {
	log := logger.With("client_id", hd.client, "task_id", hd.task)
	start := time.Now()
	log.Info("task runner started", "pid", os.Getpid())
	if err := h.RunTask(ctx, hd.client, hd.task, hd.runner, logger); err != nil {
		log.Error("task runner failed", "error", err.Error(), "took", time.Since(start).Round(time.Millisecond))
		return
	}
	log.Info("task runner done", "took", time.Since(start).Round(time.Millisecond))
}

// taskSweepInterval is how often `mcp serve` sweeps the tasks while it
// serves (host.SweepTasks); it also sweeps once as it starts.
const taskSweepInterval = time.Minute

// sweepTasks sweeps at once, then every taskSweepInterval until ctx ends;
// done is closed when it returns. It never delays the connection: serve runs
// it beside the connection.
func sweepTasks(ctx context.Context, h *host.Host, log *slog.Logger, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(taskSweepInterval)
	defer t.Stop()
	for {
		r, err := h.SweepTasks(ctx)
		switch {
		case errors.Is(err, host.ErrNoTasks):
			return
		case err != nil && ctx.Err() == nil:
			log.Warn("the task sweep failed; the next one retries", "error", err.Error())
		case r.Failed > 0 || r.Finished > 0 || r.Purged > 0:
			log.Info("task sweep", "failed_abandoned", r.Failed, "finished_committed", r.Finished, "purged_expired", r.Purged)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
