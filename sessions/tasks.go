package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Task statuses: the MCP 2025-11-25 task states a store keeps. A task
// starts TaskWorking; the other three are terminal and never change.
const (
	TaskWorking   = "working"
	TaskCompleted = "completed"
	TaskFailed    = "failed"
	TaskCancelled = "cancelled"
)

// Task errors. Backends wrap them with context; test with errors.Is.
var (
	// ErrTaskLimit: the client already has as many working tasks as
	// [NewTask.MaxWorking] allows. Nothing was written.
	ErrTaskLimit = errors.New("sessions: too many working tasks for this client")
	// ErrTaskDone: the task is terminal, or a runner already claimed its
	// commit point ([TaskStore.CommitTask]), so it can no longer be
	// cancelled, claimed or committed. The returned Task shows its state.
	ErrTaskDone = errors.New("sessions: task already settled")
	// ErrInvalidCursor: a tasks page cursor this store did not hand out.
	ErrInvalidCursor = errors.New("sessions: invalid task cursor")
	// ErrTaskTooLarge: a task's request, result, progress or status
	// message is over [MaxTaskPayload] (or [MaxTaskMessage]). Nothing was
	// written.
	ErrTaskTooLarge = errors.New("sessions: task payload too large")
)

// Task bounds every backend enforces before it writes.
const (
	// MaxTaskPayload bounds each of a task's JSON documents (Request,
	// Result, Progress), in bytes.
	MaxTaskPayload = 8 << 20
	// MaxTaskMessage bounds a task's status message, in bytes.
	MaxTaskMessage = 64 << 10
	// DefaultTaskPage is the page size of [TaskStore.ListTasks] for a
	// limit <= 0; MaxTaskPage caps a larger limit.
	DefaultTaskPage = 100
	MaxTaskPage     = 1000
)

// Task is one durable task: a task-augmented request recorded by the
// connection that accepted it and run to its end by a runner that may
// outlive that connection. The store treats Request, Result and Progress
// as opaque JSON; the MCP layer gives them their meaning.
type Task struct {
	ID string
	// ClientID is the client identity that owns the task; the store hands
	// the task to no other client (every client-facing method takes it).
	ClientID string
	Status   string // TaskWorking, TaskCompleted, TaskFailed or TaskCancelled
	// StatusMessage is a short human-readable note on the status ("" if none).
	StatusMessage string
	Request       json.RawMessage // what the creator recorded to run it
	Result        json.RawMessage // set by FinishTask; nil until then
	Progress      json.RawMessage // the runner's last report; nil if none
	CreatedAt     time.Time
	UpdatedAt     time.Time // the last status, message, progress or result change
	// TTL is how long the task and its result are kept after CreatedAt. A
	// task is expired once it is terminal and CreatedAt+TTL has passed (a
	// working task never expires): expired tasks are invisible and
	// PurgeExpiredTasks deletes them.
	TTL time.Duration
	// Committing is true once a runner claimed the commit point
	// ([TaskStore.CommitTask]): the task will end completed or failed, and
	// a cancel is refused.
	Committing bool
	// Runner holds the runner lease until RunnerExpiresAt ("" before a
	// runner claimed it).
	Runner          string
	RunnerExpiresAt time.Time
}

// NewTask is a task to create.
type NewTask struct {
	ID       string // caller-chosen, cryptographically random
	ClientID string
	Request  json.RawMessage
	TTL      time.Duration // > 0
	// MaxWorking caps the client's working tasks, checked atomically with
	// the insert (ErrTaskLimit); <= 0 means no cap.
	MaxWorking int
	// Runner, when not "", creates the task claimed: Runner holds its
	// lease until Lease (> 0) from now, as after a [TaskStore.ClaimTask],
	// so the runner it is handed to need not claim it in a write of its
	// own. "" creates it unclaimed (Lease is ignored).
	Runner string
	Lease  time.Duration
}

// TaskPage is one page of [TaskStore.ListTasks].
type TaskPage struct {
	Tasks []Task
	// Next is the opaque cursor of the next page, "" on the last one.
	Next string
}

// TaskStore keeps durable tasks. Both backends implement it; it is the
// cross-process commit point of a task's turn: CommitTask (the runner's
// final write) and CancelTask (a client's cancel) are compare-and-set
// updates of one row, so exactly one of them wins, whatever process each
// runs in. Every method that takes a clientID answers ErrNotFound for a
// task of another client, and for an expired one.
type TaskStore interface {
	// CreateTask stores a working task created now. ErrExists if the id is
	// taken, ErrTaskLimit if the client is at its cap; ErrInvalidText,
	// ErrTaskTooLarge or a plain error for input it refuses (an empty id
	// or client, a TTL <= 0, a Request that is not valid UTF-8 JSON).
	CreateTask(ctx context.Context, t NewTask) (Task, error)
	// GetTask returns clientID's task id.
	GetTask(ctx context.Context, clientID, id string) (Task, error)
	// ListTasks returns clientID's unexpired tasks, oldest first (ties by
	// id), at most limit after cursor ("" for the first page); a limit <= 0
	// is [DefaultTaskPage], one over [MaxTaskPage] is MaxTaskPage. The
	// listed tasks carry no Request, Result or Progress (GetTask has them),
	// so a page stays small. ErrInvalidCursor for a cursor this store did
	// not hand out.
	ListTasks(ctx context.Context, clientID, cursor string, limit int) (TaskPage, error)
	// CancelTask moves clientID's working, uncommitted task to
	// TaskCancelled and returns it. ErrTaskDone (with the task as it is)
	// when it is terminal or committing.
	CancelTask(ctx context.Context, clientID, id string) (Task, error)

	// ClaimTask takes the runner lease of working task id for runner until
	// ttl from now and returns the task: a task nobody claimed, one whose
	// lease lapsed (a takeover), or runner's own (a renewal). ErrBusy if
	// another runner's lease is live; ErrTaskDone if the task is terminal
	// or committing; ErrNotFound.
	ClaimTask(ctx context.Context, id, runner string, ttl time.Duration) (Task, error)
	// RenewTask extends runner's lease, stores progress when it is not nil,
	// and returns the task, so the runner sees a cancel (Status
	// TaskCancelled) or a failure by FailAbandonedTasks. Progress is kept
	// only while the task is working. ErrLeaseLost if runner no longer
	// holds the lease (a lease that lapsed but nobody took over is still
	// runner's).
	RenewTask(ctx context.Context, id, runner string, ttl time.Duration, progress json.RawMessage) (Task, error)
	// CommitTask is the runner's side of the commit point, taken right
	// before the turn's final write: it marks runner's working task
	// Committing (again: a no-op for the runner that committed). ErrTaskDone
	// when a cancel won (the task is cancelled) or the task is otherwise
	// terminal; ErrLeaseLost when runner does not hold a live lease (one
	// that lapsed may be failed by FailAbandonedTasks at any moment, so it
	// commits nothing).
	CommitTask(ctx context.Context, id, runner string) (Task, error)
	// FinishTask moves runner's working task to status (TaskCompleted,
	// TaskFailed, or TaskCancelled when it did not commit) with message and
	// result. ErrTaskDone (task unchanged) when it is already terminal, or
	// committing and status is TaskCancelled; ErrLeaseLost when runner does
	// not hold the lease (one that lapsed but nobody took over is still
	// runner's).
	FinishTask(ctx context.Context, id, runner, status, message string, result json.RawMessage) (Task, error)

	// FailAbandonedTasks moves to TaskFailed, with message and result,
	// every working task that is not committing whose runner lease lapsed,
	// or that no runner claimed within unclaimed (> 0) of its creation, and
	// returns how many. A committing task whose lease lapsed is left
	// working: its reply may be stored (see AbandonedCommits).
	FailAbandonedTasks(ctx context.Context, message string, result json.RawMessage, unclaimed time.Duration) (int, error)
	// AbandonedCommits returns at most limit (1 to MaxTaskPage) working
	// tasks that are committing and whose runner lease lapsed, oldest
	// first, with their Request: their runner stopped after its commit
	// point, so their reply may be stored. Whoever settles one finishes it
	// with FinishTask in the name of its Runner, whose compare-and-set
	// makes exactly one of it and a runner that wakes up win.
	AbandonedCommits(ctx context.Context, limit int) ([]Task, error)
	// PurgeExpiredTasks deletes the expired tasks and returns how many.
	PurgeExpiredTasks(ctx context.Context) (int, error)
}
