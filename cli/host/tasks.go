package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

// TaskUnclaimedAfter is how long a task may wait for its runner to claim it
// before [Host.SweepTasks] fails it: starting the runner process and
// opening its host takes seconds, not minutes.
const TaskUnclaimedAfter = 2 * time.Minute

// DefaultTaskMaxRunners is the default of mcp_server.tasks.max_runners.
const DefaultTaskMaxRunners = 16

// ErrNotPaired: the client a task belongs to is no longer the paired one
// (its token was rotated), so its task does not run.
var ErrNotPaired = errors.New("host: the task's client is no longer paired")

// ErrNoTasks: the host cannot keep tasks (its store does not, or tasks are
// off in mcp_server.tasks.enabled).
var ErrNoTasks = errors.New("host: durable MCP tasks are not available")

// taskStore returns the task store of st, through the audit anchor's hold.
func taskStore(st sessions.Store) (sessions.TaskStore, bool) {
	if a, ok := st.(*anchoredStore); ok {
		st = a.Store
	}
	ts, ok := st.(sessions.TaskStore)
	return ts, ok
}

// Tasks returns the store's durable tasks, or [ErrNoTasks].
func (h *Host) Tasks() (sessions.TaskStore, error) {
	ts, ok := taskStore(h.store)
	if !ok || !h.cfg.MCPServer.Tasks.Enabled {
		return nil, ErrNoTasks
	}
	return ts, nil
}

// taskOptions are the MCP service's task options over ts with start (nil
// for a runner, which starts no task).
func (h *Host) taskOptions(ts sessions.TaskStore, start func(ctx context.Context, taskID, runner string) error) *mcpserver.TaskOptions {
	tc := h.cfg.MCPServer.Tasks
	return &mcpserver.TaskOptions{
		Store:      ts,
		Start:      start,
		MaxWorking: tc.MaxWorking,
		DefaultTTL: tc.DefaultTTL,
		MaxTTL:     tc.MaxTTL,
	}
}

// RunTask runs task taskID of the client with clientID, created claimed for
// runner ("" if unknown), to its end
// (mcpserver.RunTask) with that client's speaker, as its detached runner
// does. It refuses with [ErrNotPaired] when clientID is no longer the
// fingerprint of the state directory's token: a rotated token ends what
// its client may start. logger receives the diagnostics (nil: the host's).
func (h *Host) RunTask(ctx context.Context, clientID, taskID, runner string, logger *slog.Logger) error {
	ts, err := h.Tasks()
	if err != nil {
		return err
	}
	token, err := tokenauth.Read(tokenauth.Path(h.cfg.StateDir))
	if err != nil {
		return fmt.Errorf("run task %s: read the paired token: %w", taskID, err)
	}
	if tokenauth.Fingerprint(token) != clientID {
		return fmt.Errorf("run task %s: %w (run `openprogram mcp token create` or pair the client again)", taskID, ErrNotPaired)
	}
	opts, err := h.mcpOptions(clientID, logger)
	if err != nil {
		return err
	}
	opts.Tasks = h.taskOptions(ts, nil)
	opts.Tasks.Finished = h.taskDone
	return mcpserver.RunTask(ctx, opts, taskID, runner)
}

// SweepTasks settles the tasks whose runner is gone and deletes the
// expired ones (mcpserver.SweepTasks): a task whose runner stopped before
// its commit point (or that no runner claimed within
// [TaskUnclaimedAfter]) fails with mcpserver.TaskAbandonedMessage; one
// whose runner stopped after it is finished from the reply stored in its
// session, with the records its runner did not write. `mcp serve` runs it
// when it starts and every minute while it serves. With tasks off it does
// nothing and answers [ErrNoTasks]: no client can reach a task then, and
// the first serve with tasks on sweeps what is left.
func (h *Host) SweepTasks(ctx context.Context) (mcpserver.SweepResult, error) {
	ts, err := h.Tasks()
	if err != nil {
		return mcpserver.SweepResult{}, err
	}
	return mcpserver.SweepTasks(ctx, mcpserver.SweepOptions{
		Store: ts, Conversations: h.conv, Unclaimed: TaskUnclaimedAfter, Logger: h.log,
		Speaker: func(clientID string) (authz.Speaker, error) { return h.MCPClient(clientID) },
	})
}
