package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/openprogram/openprogram/cli/host"
)

// mcpRunTaskCmd is the detached runner of one durable MCP task, started by
// `mcp serve` (taskSpawner) and by nothing else: it runs the task's turn
// with the authority of the client the task belongs to and exits when the
// task is terminal. It holds no token: the client id (not a secret) comes
// from the serve process that authenticated the client, and the host
// refuses it when that client is no longer the paired one.
type mcpRunTaskCmd struct {
	LogLevel  string `name:"log-level" default:"info" enum:"debug,info,warn,error" help:"Least severe log records written: ${enum}."`
	LogFormat string `name:"log-format" default:"text" enum:"text,json" help:"Log record format: ${enum}."`
	Slots     int    `name:"slots" default:"0" help:"How many runner slots the runner inherits, open from file descriptor 3 (held until it exits)."`
	Client    string `name:"client" required:"" help:"The client id (token fingerprint) the task belongs to."`
	Task      string `arg:"" name:"task-id" help:"The task to run."`
}

// Run runs the task. It ignores SIGHUP (it has no terminal), and ends the
// task through its context on SIGTERM or SIGINT (cli's main).
func (c mcpRunTaskCmd) Run(ctx context.Context, app *App) error {
	signal.Ignore(syscall.SIGHUP)
	keepSlots(c.Slots)
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
	log := logger.With("client_id", c.Client, "task_id", c.Task)
	h, err := openHost(ctx, app, dir, host.Options{Logger: log})
	if err != nil {
		return err
	}
	defer h.Close()
	start := time.Now()
	log.Info("task runner started", "pid", os.Getpid())
	if err := h.RunTask(ctx, c.Client, c.Task, logger); err != nil {
		log.Error("task runner failed", "error", err.Error(), "took", time.Since(start).Round(time.Millisecond))
		return fmt.Errorf("run task %s: %w", c.Task, err)
	}
	log.Info("task runner done", "took", time.Since(start).Round(time.Millisecond))
	return nil
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
