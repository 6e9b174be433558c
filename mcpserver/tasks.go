package mcpserver

import (
	"context"
	"errors"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// Defaults of [TaskOptions].
const (
	DefaultTaskMaxWorking   = 4
	DefaultTaskTTL          = time.Hour
	DefaultTaskMaxTTL       = 24 * time.Hour
	DefaultTaskPollInterval = time.Second
	// MinTaskTTL is the shortest ttl a task is kept: a smaller requested
	// ttl is raised to it.
	MinTaskTTL = time.Second
)

// TaskOptions enable durable MCP tasks (protocol 2025-11-25) for
// prompt_send: the server advertises capabilities.tasks and
// execution.taskSupport "optional" on prompt_send, accepts tools/call with
// params.task for it, and answers tasks/get, tasks/result, tasks/list and
// tasks/cancel from Store. The turn of a task runs in [RunTask], usually in
// a process Start launches, so that it outlives the connection.
type TaskOptions struct {
	// Store keeps the tasks; it is the commit point between this process
	// and the task's runner. Required.
	Store sessions.TaskStore
	// Start launches the runner of a task just created (for example a
	// detached process that calls [RunTask]). Required. An error fails the
	// task at once. ctx is the creating request's and ends with it: Start
	// must not tie the runner's life to it.
	Start func(ctx context.Context, taskID string) error
	// MaxWorking caps the working tasks of one client identity. Default
	// DefaultTaskMaxWorking.
	MaxWorking int
	// DefaultTTL is the ttl of a task created without one. Default
	// DefaultTaskTTL; at most MaxTTL.
	DefaultTTL time.Duration
	// MaxTTL caps every task's ttl. Default DefaultTaskMaxTTL.
	MaxTTL time.Duration
	// PollInterval is the pollInterval suggested to clients, and how often
	// a connection looks at the tasks it created. Default
	// DefaultTaskPollInterval.
	PollInterval time.Duration
}

// errTaskRunnerUnbuilt is RunTask's answer until the runner is built.
var errTaskRunnerUnbuilt = errors.New("mcpserver: RunTask is not built yet")

// RunTask runs task taskID to its end: it claims the task's runner lease,
// runs its prompt_send turn through the same path as a plain prompt_send
// (opts.Authority, which must be that of the task's client, the session
// lease, audit with the task id, progress stored in the task), renews the
// lease and watches for tasks/cancel while the turn runs, and finishes the
// task with the exact result the prompt_send would have answered. opts
// must carry Tasks with its Store. It never leaves a task working that it
// claimed: a failure ends the task failed.
func RunTask(ctx context.Context, opts Options, taskID string) error {
	return errTaskRunnerUnbuilt
}
