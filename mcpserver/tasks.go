package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/internal/schema"
	"github.com/openprogram/openprogram/mcpserver/internal/stdio"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/conversation"
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

// TaskAbandonedMessage is the statusMessage of a task whose runner stopped
// (or never started) before the task ended: [SweepTasks] fails such tasks
// once their runner lease lapsed.
const TaskAbandonedMessage = "the task's runner stopped before the turn finished; send the prompt again"

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
	// detached process that calls [RunTask]) and passes it runner, the
	// lease the task was created claimed for, which only that runner is
	// told ([RunTask]'s runner). Required. An error fails the task at
	// once. ctx is the creating request's and ends with it: Start must not
	// tie the runner's life to it.
	Start func(ctx context.Context, taskID, runner string) error
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
	// Ended, when set, returns a channel that is closed once the runner
	// Start launched for task taskID reports that its turn is over, or nil
	// when no such report will come (a task another process started).
	// tasks/result and the creating connection's watch wake on it at once
	// instead of at their next read of the store; the store stays the
	// truth, read after every wake, and its polling the fallback.
	Ended func(taskID string) <-chan struct{}
	// Finished, for a runner ([RunTask]), is called as soon as the task it
	// runs is terminal in the store, before the task's mcp.task.finished
	// record is written: the runner reports the end with it (what Ended
	// of the serving process waits for). Nil: nothing is called.
	Finished func(taskID string)
}

// Timing of a task's runner and of tasks/result.
const (
	// taskLeaseTTL is the runner lease: a runner that stops renewing loses
	// its task to SweepTasks this long after its last renewal.
	taskLeaseTTL = 30 * time.Second
	// taskRenewEvery is how often the runner renews its lease and stores
	// its progress.
	taskRenewEvery = 2 * time.Second
	// taskWatchEvery is how often the runner reads its task for a
	// tasks/cancel between renewals (a read of one row): a cancelled
	// task's runner stops within a second.
	taskWatchEvery = 250 * time.Millisecond
	// taskResultPoll is how often tasks/result reads the store while it
	// waits, once it has backed off from taskResultFirstPoll (doubling).
	taskResultPoll      = 250 * time.Millisecond
	taskResultFirstPoll = 5 * time.Millisecond
	// For its first taskResultQuick, tasks/result polls at least every
	// taskResultQuickPoll: a task's turn often ends within a second (its
	// runner starts in tens of milliseconds), and a read of one task row
	// costs a fraction of a millisecond.
	taskResultQuick     = 3 * time.Second
	taskResultQuickPoll = 20 * time.Millisecond
	// tasksListLimit is the page size of tasks/list.
	tasksListLimit = 100
	// maxProgressStatus bounds the statusMessage a working task shows from
	// its turn's progress, in bytes.
	maxProgressStatus = 256
)

// taskConfig is TaskOptions with defaults applied.
type taskConfig struct {
	store        sessions.TaskStore
	start        func(ctx context.Context, taskID, runner string) error
	maxWorking   int
	defaultTTL   time.Duration
	maxTTL       time.Duration
	pollInterval time.Duration
	ended        func(taskID string) <-chan struct{}
	finished     func(taskID string)
}

// endedOf is the channel closed when the runner of task id reports its
// end, or nil when none will (see TaskOptions.Ended).
func (t *taskConfig) endedOf(id string) <-chan struct{} {
	if t.ended == nil {
		return nil
	}
	return t.ended(id)
}

// finish tells the runner's caller that task id is terminal in the store
// (see TaskOptions.Finished).
func (t *taskConfig) finish(id string) {
	if t.finished != nil {
		t.finished(id)
	}
}

func newTaskConfig(o *TaskOptions, runner bool) (*taskConfig, error) {
	if o == nil {
		return nil, nil
	}
	if o.Store == nil {
		return nil, errors.New("mcpserver: TaskOptions.Store is nil; pass the session store's task store")
	}
	if o.Start == nil && !runner {
		return nil, errors.New("mcpserver: TaskOptions.Start is nil; pass the function that launches a task's runner")
	}
	if o.MaxWorking < 0 || o.DefaultTTL < 0 || o.MaxTTL < 0 || o.PollInterval < 0 {
		return nil, errors.New("mcpserver: TaskOptions limits must not be negative")
	}
	t := &taskConfig{
		store: o.Store, start: o.Start, maxWorking: o.MaxWorking, defaultTTL: o.DefaultTTL,
		maxTTL: o.MaxTTL, pollInterval: o.PollInterval, ended: o.Ended, finished: o.Finished,
	}
	if t.maxWorking == 0 {
		t.maxWorking = DefaultTaskMaxWorking
	}
	if t.maxTTL == 0 {
		t.maxTTL = DefaultTaskMaxTTL
	}
	if t.maxTTL < MinTaskTTL {
		return nil, fmt.Errorf("mcpserver: TaskOptions.MaxTTL %s is below the minimum %s", t.maxTTL, MinTaskTTL)
	}
	if t.defaultTTL == 0 {
		t.defaultTTL = DefaultTaskTTL
	}
	t.defaultTTL = min(max(t.defaultTTL, MinTaskTTL), t.maxTTL)
	if t.pollInterval == 0 {
		t.pollInterval = DefaultTaskPollInterval
	}
	return t, nil
}

// ttl clamps a requested ttl (nil: none requested) to [MinTaskTTL, maxTTL].
func (t *taskConfig) ttl(requestedMs *float64) time.Duration {
	if requestedMs == nil {
		return t.defaultTTL
	}
	ms := *requestedMs
	if ms >= float64(t.maxTTL/time.Millisecond) {
		return t.maxTTL
	}
	return max(time.Duration(ms)*time.Millisecond, MinTaskTTL)
}

// taskJSON is the protocol's Task.
type taskJSON struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// taskTime is the protocol's ISO 8601 form of a task time: UTC, ms.
func taskTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// wire is task as the protocol's Task. A working task's statusMessage is
// its turn's latest progress, as its runner stored it (at most once per
// lease renewal, clipped to maxProgressStatus), so that any connection of
// its client, not only the one that created it, sees the turn go on.
func (t *taskConfig) wire(task sessions.Task) taskJSON {
	msg := task.StatusMessage
	if task.Status == sessions.TaskWorking && msg == "" {
		if p, ok := decodeProgress(task.Progress); ok {
			msg = clip.String(p.Message, maxProgressStatus-len(clip.Marker))
		}
	}
	return taskJSON{
		TaskID: task.ID, Status: task.Status, StatusMessage: msg,
		CreatedAt: taskTime(task.CreatedAt), LastUpdatedAt: taskTime(task.UpdatedAt),
		TTL: task.TTL.Milliseconds(), PollInterval: t.pollInterval.Milliseconds(),
	}
}

// taskRequest is what a task records to run: the prompt_send it stands for.
type taskRequest struct {
	RequestID  any    `json:"request_id"` // the creating tools/call's JSON-RPC id
	SessionID  string `json:"session_id"`
	NewSession bool   `json:"new_session,omitempty"`
	Prompt     string `json:"prompt"`
	// TraceParent and TraceState are the creating request's trace context
	// (W3C): the runner continues that trace.
	TraceParent string `json:"traceparent,omitempty"`
	TraceState  string `json:"tracestate,omitempty"`
}

// taskOutcome is what a finished task stores as its result: exactly one of
// the CallToolResult and the JSON-RPC error its prompt_send answered.
type taskOutcome struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  *jsonrpc.Error  `json:"error,omitempty"`
}

// relatedTaskKey is the _meta key tying a tasks/result answer to its task.
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// taskParams are the params.task of a task-augmented request.
type taskParams struct {
	TTL *float64 `json:"ttl"`
}

// taskOf returns params.task of a tools/call: nil when absent or null, and
// a -32602 error when malformed.
func taskOf(params json.RawMessage) (*taskParams, *jsonrpc.Error) {
	// Read where it lies, as decoding into a struct would name it (letter
	// case aside, the last counting): a maximal tools/call's arguments are
	// skipped over, not decoded (params were checked to be a JSON object).
	var raw []byte
	schema.Members(bytes.TrimSpace(params), func(name string, _, value []byte) {
		if strings.EqualFold(name, "task") {
			raw = value
		}
	})
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	bad := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `invalid params: "task" must be an object with an optional "ttl" (a non-negative number of milliseconds)`}
	if raw[0] != '{' {
		return nil, bad
	}
	var t struct {
		TTL json.RawMessage `json:"ttl"`
	}
	if json.Unmarshal(raw, &t) != nil {
		return nil, bad
	}
	out := &taskParams{}
	if ttl := bytes.TrimSpace(t.TTL); len(ttl) > 0 && string(ttl) != "null" {
		var ms float64
		if json.Unmarshal(ttl, &ms) != nil || ms < 0 || math.IsInf(ms, 0) || math.IsNaN(ms) {
			return nil, bad
		}
		out.TTL = &ms
	}
	return out, nil
}

// newTaskID returns "task_" and 26 random base32 characters (130 bits).
func newTaskID() string { return "task_" + rand.Text() }

// createTask answers a task-augmented prompt_send: it validates like
// prompt_send, writes the request record (fail closed), creates the task,
// starts its runner and answers CreateTaskResult at once.
func (c *connection) createTask(ctx context.Context, req *mcp.CallToolRequest, tp *taskParams) (mcp.Result, error) {
	s, tc := c.s, c.s.tasks
	r := stdio.RequestOf(req)
	if r == nil {
		return nil, errors.New("prompt_send: the request did not come through the stdio connection")
	}
	a, err := takeArgs[contracts.PromptSendArgs](ctx)
	if err != nil {
		return nil, err
	}
	turn := c.line.NewTurn(r.ID().Raw(), a.SessionID, a.Prompt)
	if !turn.NewSession {
		if _, err := s.conv.Session(ctx, turn.SessionID); errors.Is(err, conversation.ErrSessionNotFound) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: contracts.TextInvalidPromptSession}
		} else if err != nil {
			return nil, taskStoreError()
		}
	}
	id := s.newTaskID()
	turn.TaskID = id
	if err := c.line.Admit(ctx, turn); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task refused: its audit record could not be written (audit_unavailable)"}
	}
	treq := taskRequest{RequestID: turn.RequestID, SessionID: turn.SessionID, NewSession: turn.NewSession, Prompt: turn.Text}
	treq.TraceParent, treq.TraceState = traceContextOf(ctx)
	body, err := json.Marshal(treq)
	if err != nil {
		return nil, fmt.Errorf("encode task request: %w", err)
	}
	ttl := tc.ttl(tp.TTL)
	// The task is created claimed for the runner it is handed to, which
	// then needs no write of its own to take it.
	runner := newHandedRunnerID()
	task, err := tc.store.CreateTask(ctx, sessions.NewTask{ID: id, ClientID: s.clientID, Request: body, TTL: ttl, MaxWorking: tc.maxWorking,
		Runner: runner, Lease: taskLeaseTTL})
	switch {
	case errors.Is(err, sessions.ErrTaskLimit):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("too many working tasks: at most %d per client; wait for one to end or cancel one with tasks/cancel", tc.maxWorking)}
	case errors.Is(err, sessions.ErrTaskTooLarge):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params: the prompt is too large to keep as a task (at most %d bytes recorded); send it without \"task\"", sessions.MaxTaskPayload)}
	case err != nil:
		s.log.Warn("prompt_send task: create task failed", "error", err)
		return nil, taskStoreError()
	}
	c.line.Record(ctx, AuditTaskCreated, turn.SessionID, TaskCreatedPayload{TaskID: id, RequestID: turn.RequestID, ClientID: s.clientID, TTLMs: ttl.Milliseconds()})
	countTask(ctx, sessions.TaskWorking)
	if err := tc.start(ctx, id, runner); err != nil {
		s.log.Error("start the task's runner failed", "task_id", id, "error", err)
		task = c.failUnstarted(task, runner)
	}
	c.watchTask(task, req, r)
	return &createTaskResult{Task: tc.wire(task)}, nil
}

// createTaskResult is the protocol's CreateTaskResult.
type createTaskResult struct {
	mcp.ResultBase
	Task taskJSON `json:"task"`
}

// taskStoreError answers a request the task store failed.
func taskStoreError() *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task store unavailable; try again later"}
}

// failUnstarted fails a task whose runner could not be started, in the
// name of runner, the lease it was created claimed for, and returns it as
// it then is.
func (c *connection) failUnstarted(task sessions.Task, runner string) sessions.Task {
	tc := c.s.tasks
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := json.Marshal(failedOutcome())
	done, err := tc.store.FinishTask(ctx, task.ID, runner, sessions.TaskFailed, TaskAbandonedMessage, out)
	if err != nil {
		c.s.log.Warn("fail an unstarted task", "task_id", task.ID, "error", err)
		return task
	}
	c.line.Record(ctx, AuditTaskFinished, "", TaskFinishedPayload{TaskID: task.ID, ClientID: c.s.clientID, Status: done.Status})
	return done
}

// failedOutcome is the outcome of a task that failed the way a prompt_send
// that could not run answers (contracts.TextToolExecutionFailed).
func failedOutcome() taskOutcome { return taskOutcome{Result: mustResult(executionFailed())} }

// mustResult encodes a CallToolResult (which cannot fail).
func mustResult(res *mcp.CallToolResult) json.RawMessage {
	data, err := json.Marshal(res)
	if err != nil {
		panic(fmt.Sprintf("encode CallToolResult: %v", err))
	}
	return data
}

// watchTask follows a task this connection created, from after the
// CreateTaskResult is written until it is terminal or the connection ends:
// every status change it observes goes out as notifications/tasks/status,
// and the runner's stored progress as notifications/progress when the
// creating request had a progressToken.
func (c *connection) watchTask(task sessions.Task, req *mcp.CallToolRequest, r *stdio.Request) {
	if c.conn == nil {
		return
	}
	var token any
	if req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	tc := c.s.tasks
	c.watchers.Add(1)
	go func() {
		defer c.watchers.Done()
		select {
		case <-r.Answered():
		case <-c.done:
			return
		}
		last := task
		var lastProgress float64
		tick := time.NewTicker(tc.pollInterval)
		defer tick.Stop()
		ended := tc.endedOf(task.ID)
		for last.Status == sessions.TaskWorking {
			select {
			case <-tick.C:
			case <-ended:
				ended = nil // read the store now, then at the ticks
			case <-c.done:
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			now, err := tc.store.GetTask(ctx, c.s.clientID, task.ID)
			cancel()
			if err != nil {
				if errors.Is(err, sessions.ErrNotFound) {
					return
				}
				continue
			}
			if token != nil && now.Status == sessions.TaskWorking {
				if p, ok := decodeProgress(now.Progress); ok && p.Progress > lastProgress {
					lastProgress = p.Progress
					_ = c.conn.Notify("notifications/progress", &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Message: p.Message})
				}
			}
			if now.Status != last.Status || now.StatusMessage != last.StatusMessage {
				_ = c.conn.Notify("notifications/tasks/status", tc.wire(now))
			}
			last = now
		}
	}()
}

// storedProgress is the progress a runner stores in its task.
type storedProgress struct {
	Progress float64 `json:"progress"`
	Message  string  `json:"message,omitempty"`
}

func decodeProgress(raw json.RawMessage) (storedProgress, bool) {
	var p storedProgress
	if len(raw) == 0 || json.Unmarshal(raw, &p) != nil {
		return p, false
	}
	return p, true
}

// taskHandlers are the tasks/* methods, answered by the connection itself
// (go-sdk v1.8.0 knows none of them).
func (c *connection) taskHandlers() map[string]stdio.Handler {
	return map[string]stdio.Handler{
		"tasks/get":    c.tasksGet,
		"tasks/result": c.tasksResult,
		"tasks/list":   c.tasksList,
		"tasks/cancel": c.tasksCancel,
	}
}

// taskIDParam reads params.taskId.
func taskIDParam(params json.RawMessage) (string, *jsonrpc.Error) {
	var p struct {
		TaskID *string `json:"taskId"`
	}
	if len(bytes.TrimSpace(params)) == 0 || json.Unmarshal(params, &p) != nil || p.TaskID == nil {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `invalid params: "taskId" must be a string`}
	}
	return *p.TaskID, nil
}

// errTaskNotFound answers a task that is not the caller's, unknown or
// expired: the three are indistinguishable on purpose.
func errTaskNotFound(id string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("task not found: %q (unknown, expired, or not yours)", clipID(id))}
}

// clipID bounds a client-supplied task id in a message or log line.
func clipID(id string) string { return clip.String(id, 64) }

// getTask reads the caller's task id.
func (c *connection) getTask(ctx context.Context, id string) (sessions.Task, *jsonrpc.Error) {
	task, err := c.s.tasks.store.GetTask(ctx, c.s.clientID, id)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		return task, errTaskNotFound(id)
	case err != nil:
		c.s.log.Warn("read task failed", "task_id", clipID(id), "error", err)
		return task, taskStoreError()
	}
	return task, nil
}

func encodeResult(v any) (json.RawMessage, *jsonrpc.Error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	return data, nil
}

func (c *connection) tasksGet(ctx context.Context, _ *stdio.Request, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	id, perr := taskIDParam(params)
	if perr != nil {
		return nil, perr
	}
	task, err := c.getTask(ctx, id)
	if err != nil {
		return nil, err
	}
	return encodeResult(c.s.tasks.wire(task))
}

func (c *connection) tasksList(ctx context.Context, _ *stdio.Request, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if len(bytes.TrimSpace(params)) > 0 && json.Unmarshal(params, &p) != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `invalid params: "cursor" must be a string`}
	}
	cursor := ""
	if p.Cursor != nil {
		cursor = *p.Cursor
	}
	page, err := c.s.tasks.store.ListTasks(ctx, c.s.clientID, cursor, tasksListLimit)
	switch {
	case errors.Is(err, sessions.ErrInvalidCursor):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid params: invalid cursor"}
	case err != nil:
		c.s.log.Warn("list tasks failed", "error", err)
		return nil, taskStoreError()
	}
	out := struct {
		Tasks      []taskJSON `json:"tasks"`
		NextCursor string     `json:"nextCursor,omitempty"`
	}{Tasks: make([]taskJSON, 0, len(page.Tasks)), NextCursor: page.Next}
	for _, t := range page.Tasks {
		out.Tasks = append(out.Tasks, c.s.tasks.wire(t))
	}
	return encodeResult(out)
}

func (c *connection) tasksCancel(ctx context.Context, r *stdio.Request, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	id, perr := taskIDParam(params)
	if perr != nil {
		return nil, perr
	}
	// The store's compare-and-set decides against the runner's commit: the
	// task is cancelled there before this answers, or it is not at all.
	task, err := c.s.tasks.store.CancelTask(context.WithoutCancel(ctx), c.s.clientID, id)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		return nil, errTaskNotFound(id)
	case errors.Is(err, sessions.ErrTaskDone):
		if task.Status == sessions.TaskWorking {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("cannot cancel task %q: it is completing (its turn is writing its reply)", clipID(id))}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("cannot cancel task %q: it already ended (%s)", clipID(id), task.Status)}
	case err != nil:
		c.s.log.Warn("cancel task failed", "task_id", clipID(id), "error", err)
		return nil, taskStoreError()
	}
	c.line.Record(ctx, AuditTaskCancelled, "", TaskCancelledPayload{TaskID: task.ID, RequestID: r.ID().Raw(), ClientID: c.s.clientID})
	return encodeResult(c.s.tasks.wire(task))
}

// tasksResult waits until the task is terminal and answers exactly what its
// prompt_send answered, with the related-task _meta.
func (c *connection) tasksResult(ctx context.Context, r *stdio.Request, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	id, perr := taskIDParam(params)
	if perr != nil {
		return nil, perr
	}
	tc := c.s.tasks
	var task sessions.Task
	// A task whose runner reports its end (one this process started) is
	// read when it does, and at the steady pace besides. Any other is
	// polled quickly first (a short turn ends within milliseconds), then
	// at the steady pace. The channel is taken before the first read: a
	// report that comes between them is not missed.
	ended := tc.endedOf(id)
	wait := min(taskResultFirstPoll, taskResultPoll, tc.pollInterval)
	if ended != nil {
		wait = min(taskResultPoll, tc.pollInterval)
	}
	started := time.Now()
	for {
		var err *jsonrpc.Error
		if task, err = c.getTask(ctx, id); err != nil {
			if ctx.Err() != nil {
				return nil, errRequestCancelled
			}
			return nil, err
		}
		if task.Status != sessions.TaskWorking {
			break
		}
		t := time.NewTimer(wait)
		steady := taskResultPoll
		if ended == nil && time.Since(started) < taskResultQuick {
			steady = min(steady, taskResultQuickPoll)
		}
		wait = min(2*wait, steady, tc.pollInterval)
		select {
		case <-t.C:
		case <-ended:
			// Read the store now; after that only the polls remain (a
			// runner that reported without ending the task, say one that
			// could not claim it, leaves it to the sweep).
			t.Stop()
			ended = nil
		case <-ctx.Done():
			t.Stop()
			return nil, errRequestCancelled
		}
	}
	var out taskOutcome
	if len(task.Result) == 0 || json.Unmarshal(task.Result, &out) != nil || (out.Result == nil && out.Error == nil) {
		if task.Status == sessions.TaskCancelled {
			return nil, errRequestCancelled
		}
		return withRelatedTask(mustResult(executionFailed()), task.ID)
	}
	if out.Error != nil {
		return nil, out.Error
	}
	if err := r.Reserve(ctx, 2*len(out.Result)+1<<10); err != nil {
		return nil, errRequestCancelled
	}
	return withRelatedTask(out.Result, task.ID)
}

// withRelatedTask adds _meta["io.modelcontextprotocol/related-task"] to a
// result object.
func withRelatedTask(result json.RawMessage, taskID string) (json.RawMessage, *jsonrpc.Error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(result, &obj) != nil || obj == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error: the task's stored result is not an object"}
	}
	meta := map[string]json.RawMessage{}
	if m, ok := obj["_meta"]; ok {
		_ = json.Unmarshal(m, &meta)
	}
	rel, _ := json.Marshal(map[string]string{"taskId": taskID})
	meta[relatedTaskKey] = rel
	obj["_meta"], _ = json.Marshal(meta)
	return encodeResult(obj)
}

// takeTask returns task taskID with the runner lease this runner holds
// and the runner id it holds it as. A task created claimed for handed, this
// client's and working with that lease live, is taken with a read: the
// process that created it handed it to this runner alone. Any other task
// (another client's, one without a lease or whose lease lapsed) is claimed,
// as handed, or under a new runner id when handed is "": the
// compare-and-set that refuses a task cancelled, ended or held by another
// runner.
func (s *Server) takeTask(ctx context.Context, taskID, handed string) (sessions.Task, string, error) {
	tc := s.tasks
	runner := handed
	if runner == "" {
		runner = newRunnerID()
	} else {
		task, err := tc.store.GetTask(ctx, s.clientID, taskID)
		if err == nil && task.Status == sessions.TaskWorking && !task.Committing && task.Runner == handed && time.Now().Before(task.RunnerExpiresAt) {
			return task, handed, nil
		}
	}
	task, err := tc.store.ClaimTask(ctx, taskID, runner, taskLeaseTTL)
	if err != nil {
		return sessions.Task{}, "", fmt.Errorf("mcpserver: claim task %q: %w", taskID, err)
	}
	return task, runner, nil
}

// newHandedRunnerID returns the runner id a task is created claimed for:
// random, told only to the runner the task is handed to, and of
// [A-Z2-7] alone, so that it passes where task ids pass.
func newHandedRunnerID() string { return rand.Text() }

// newRunnerID names a runner for its lease: host, process and a random part.
func newRunnerID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", clip.String(host, 64), os.Getpid(), rand.Text()[:10])
}

// TaskReplyLostMessage is the statusMessage of a task whose runner
// stopped after its commit point without storing the reply: the turn
// cannot be answered, and sending the prompt again is the client's call.
const TaskReplyLostMessage = "the task's runner stopped while storing the reply; no reply was stored"

// SweepOptions are what [SweepTasks] works with.
type SweepOptions struct {
	// Store keeps the tasks. Required.
	Store sessions.TaskStore
	// Conversations is the host's conversation service: a task whose
	// runner stopped after its commit point is finished from the reply its
	// session holds, and the turn's records are written on a line of the
	// task's client. Required.
	Conversations *conversation.Service
	// Speaker returns the speaker of the client with clientID (the one a
	// runner of its tasks runs with). Required.
	Speaker func(clientID string) (authz.Speaker, error)
	// Unclaimed is how long a task may wait for its runner to claim it
	// before it is failed. Required (> 0).
	Unclaimed time.Duration
	// Logger receives diagnostics; nil discards.
	Logger *slog.Logger
}

// SweepResult counts what one [SweepTasks] did.
type SweepResult struct {
	// Failed tasks had lost their runner before their commit point (or
	// never had one); Finished ones had lost it after, and were finished
	// from the stored reply (or failed when none was stored).
	Failed, Finished int
	// Purged tasks had expired.
	Purged int
}

// sweepBatch bounds the committed tasks one sweep settles.
const sweepBatch = 100

// SweepTasks settles the tasks whose runner is gone and purges the expired
// ones. A task whose runner lease lapsed before its commit point, or that
// no runner claimed within o.Unclaimed of its creation, is failed
// (statusMessage [TaskAbandonedMessage], the result of a failed
// prompt_send). A task whose runner stopped after its commit point is
// finished from its session: completed with the result the prompt_send
// would have answered when the reply is stored, with the
// mcp.prompt.completed and mcp.task.finished records its runner did not
// write; failed with [TaskReplyLostMessage] when no reply was stored and
// none can be any more (the session's turn lease is free). The host calls
// it when it starts serving and periodically.
func SweepTasks(ctx context.Context, o SweepOptions) (SweepResult, error) {
	var r SweepResult
	if o.Store == nil || o.Conversations == nil || o.Speaker == nil || o.Unclaimed <= 0 {
		return r, errors.New("mcpserver: SweepOptions needs Store, Conversations, Speaker and a positive Unclaimed")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	commits, err := o.Store.AbandonedCommits(ctx, sweepBatch)
	if err != nil {
		return r, fmt.Errorf("sweep tasks: %w", err)
	}
	for _, task := range commits {
		settled, err := settleCommitted(ctx, o, task)
		if err != nil {
			log.Warn("settle a task whose runner stopped after its commit point; the next sweep retries", "task_id", task.ID, "error", err)
			continue
		}
		if settled {
			r.Finished++
		}
	}
	out, err := json.Marshal(failedOutcome())
	if err != nil {
		return r, fmt.Errorf("encode abandoned task result: %w", err)
	}
	if r.Failed, err = o.Store.FailAbandonedTasks(ctx, TaskAbandonedMessage, out, o.Unclaimed); err != nil {
		return r, fmt.Errorf("fail abandoned tasks: %w", err)
	}
	if r.Purged, err = o.Store.PurgeExpiredTasks(ctx); err != nil {
		return r, fmt.Errorf("purge expired tasks: %w", err)
	}
	return r, nil
}

// settleCommitted finishes task, working and committing, whose runner's
// lease lapsed, in that runner's name: from the reply its session holds,
// or failed when it holds none and the session is free. It reports
// whether it ended the task (false: another did first, or the session is
// still busy and the next sweep looks again).
func settleCommitted(ctx context.Context, o SweepOptions, task sessions.Task) (bool, error) {
	var req taskRequest
	if err := json.Unmarshal(task.Request, &req); err != nil || req.SessionID == "" {
		return finishSwept(ctx, o.Store, nil, task, sessions.TaskFailed, TaskReplyLostMessage, failedOutcome(), nil)
	}
	sp, err := o.Speaker(task.ClientID)
	if err != nil {
		return false, fmt.Errorf("the speaker of the task's client: %w", err)
	}
	line, err := o.Conversations.Open(sp, nil)
	if err != nil {
		return false, err
	}
	defer line.Close(conversation.ReasonRunnerStopped)
	requestID := req.RequestID
	if _, err := jsonrpc.MakeID(requestID); err != nil {
		requestID = task.ID
	}
	turn := conversation.Turn{RequestID: requestID, SessionID: req.SessionID, NewSession: req.NewSession, Text: req.Prompt, TaskID: task.ID}
	reply, found, err := line.StoredReply(ctx, turn)
	if err != nil {
		return false, err
	}
	if found {
		return finishFromReply(ctx, o.Store, line, task, turn, reply)
	}
	// No reply: unless the runner is still writing it (its session's turn
	// lease is live), none will ever come.
	store := o.Conversations.Store()
	owner := "sweep/" + newRunnerID()
	switch err := store.AcquireTurn(ctx, req.SessionID, owner, taskLeaseTTL); {
	case errors.Is(err, sessions.ErrBusy):
		return false, nil
	case err != nil && !errors.Is(err, sessions.ErrNotFound):
		return false, err
	case err == nil:
		defer store.ReleaseTurn(context.WithoutCancel(ctx), req.SessionID, owner) //nolint:errcheck // the lease lapses on its own
		// A reply written between the read and the lease is found now.
		if reply, found, err = line.StoredReply(ctx, turn); err != nil {
			return false, err
		} else if found {
			return finishFromReply(ctx, o.Store, line, task, turn, reply)
		}
	}
	return finishSwept(ctx, o.Store, line, task, sessions.TaskFailed, TaskReplyLostMessage, failedOutcome(), nil)
}

// finishFromReply completes task with the result its turn's stored reply
// gives, and writes the turn's record and the task's.
func finishFromReply(ctx context.Context, store sessions.TaskStore, line *conversation.Line, task sessions.Task, turn conversation.Turn, reply conversation.Reply) (bool, error) {
	res, _ := promptAnswer(reply, nil)
	return finishSwept(ctx, store, line, task, sessions.TaskCompleted, "", taskOutcome{Result: mustResult(res)},
		func() { line.Completed(ctx, turn, reply) })
}

// finishSwept runs ended (nil: nothing) and writes mcp.task.finished on
// line (nil: none), then ends task with status in its runner's name. The
// records come first, as a runner writes its turn's record before its
// task's end: a sweeper killed in between leaves the task to the next
// sweep, which writes them again, rather than an end without its records.
// It reports false when the task had ended meanwhile.
func finishSwept(ctx context.Context, store sessions.TaskStore, line *conversation.Line, task sessions.Task, status, message string, out taskOutcome, ended func()) (bool, error) {
	body, err := json.Marshal(out)
	if err != nil {
		return false, fmt.Errorf("encode the result of task %q: %w", task.ID, err)
	}
	if ended != nil {
		ended()
	}
	if line != nil {
		line.Record(ctx, AuditTaskFinished, "", TaskFinishedPayload{TaskID: task.ID, ClientID: task.ClientID, Status: status})
	}
	_, err = store.FinishTask(ctx, task.ID, task.Runner, status, message, body)
	switch {
	case errors.Is(err, sessions.ErrTaskDone), errors.Is(err, sessions.ErrLeaseLost):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// RunTask runs task taskID to its end: it takes the task's runner lease
// (runner, the one [TaskOptions.Start] was given, when the task was created
// claimed for it and the lease is live; otherwise it claims the task under
// a new runner id, as it always does for runner ""),
// runs its prompt_send turn through the conversation service like a plain
// prompt_send (opts.Speaker, which must be the task's client's, the
// session lease, audit with the task id, progress stored in the task), renews the
// lease and watches for tasks/cancel while the turn runs, and finishes the
// task with the exact result the prompt_send would have answered. opts
// must carry Tasks with its Store (Start is not used). It never leaves a
// task working that it claimed: a failure ends the task failed. ctx ending
// stops the turn (before its commit point) and fails the task.
func RunTask(ctx context.Context, opts Options, taskID, runner string) error {
	if opts.Tasks == nil {
		return errors.New("mcpserver: RunTask needs Options.Tasks with its Store")
	}
	s, err := newServer(opts, true)
	if err != nil {
		return err
	}
	return s.runTask(ctx, taskID, runner)
}

// runTask is RunTask with a given runner id. It runs the task's turn on a
// line of its own, through the conversation service like a plain
// prompt_send's, and stores the answer that prompt_send would have given.
func (s *Server) runTask(ctx context.Context, taskID, runner string) error {
	tc := s.tasks
	line, err := s.conv.Open(s.speaker, nil)
	if err != nil {
		return fmt.Errorf("mcpserver: open the task's line: %w", err)
	}
	defer line.Close(conversation.ReasonRunnerStopped)
	task, runner, err := s.takeTask(ctx, taskID, runner)
	if err != nil {
		return err
	}
	finish := func(status, message string, out taskOutcome) error {
		body, err := json.Marshal(out)
		if err != nil {
			return fmt.Errorf("mcpserver: encode the result of task %q: %w", taskID, err)
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		done, err := tc.store.FinishTask(fctx, taskID, runner, status, message, body)
		if errors.Is(err, sessions.ErrTaskTooLarge) {
			// A reply over the store's bound: the task fails, as a
			// prompt_send whose answer could not be sent.
			s.log.Warn("task result too large to store", "task_id", taskID, "bytes", len(body))
			body, _ = json.Marshal(failedOutcome())
			done, err = tc.store.FinishTask(fctx, taskID, runner, sessions.TaskFailed, "the reply is too large to keep", body)
		}
		if errors.Is(err, sessions.ErrTaskDone) {
			tc.finish(taskID)
			return nil // a tasks/cancel ended it first
		}
		if err != nil {
			return fmt.Errorf("mcpserver: finish task %q: %w", taskID, err)
		}
		tc.finish(taskID)
		line.Record(ctx, AuditTaskFinished, "", TaskFinishedPayload{TaskID: taskID, ClientID: task.ClientID, Status: done.Status})
		countTask(ctx, done.Status)
		return nil
	}
	if task.ClientID != s.clientID {
		ferr := finish(sessions.TaskFailed, "the task's runner was built for another client", failedOutcome())
		return errors.Join(fmt.Errorf("mcpserver: task %q belongs to another client than the speaker's; build the runner's options for the task's client", taskID), ferr)
	}
	var req taskRequest
	if err := json.Unmarshal(task.Request, &req); err != nil || strings.TrimSpace(req.Prompt) == "" || req.SessionID == "" {
		ferr := finish(sessions.TaskFailed, "the task's request cannot be read", failedOutcome())
		return errors.Join(fmt.Errorf("mcpserver: task %q has an unreadable request", taskID), ferr)
	}
	// The turn as it was admitted when the task was created: its request
	// record is written already.
	requestID := req.RequestID
	if _, err := jsonrpc.MakeID(requestID); err != nil {
		requestID = taskID
	}
	turn := conversation.Turn{RequestID: requestID, SessionID: req.SessionID, NewSession: req.NewSession, Text: req.Prompt, TaskID: taskID}
	// The runner's work continues the creating request's trace.
	ctx, span := startTaskSpan(ctx, req.TraceParent, req.TraceState)
	defer span.End()

	sink := &progressSink{}
	prog := &progress{ctx: context.WithoutCancel(ctx), notify: sink.notify, token: taskID}
	fwd := startTurnProgress(prog)
	commit := runtime.NewDurableCommit(func() error {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, err := tc.store.CommitTask(cctx, taskID, runner)
		return err
	})
	answered := make(chan struct{})
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var lostLease bool
	var wg sync.WaitGroup
	// The lease keeper: renews, stores the latest progress, and relays a
	// tasks/cancel (status cancelled in the store), seen at a renewal or
	// a read between them, to the commit point.
	wg.Go(func() {
		renew := time.NewTicker(taskRenewEvery)
		defer renew.Stop()
		watch := time.NewTicker(taskWatchEvery)
		defer watch.Stop()
		for {
			var (
				now sessions.Task
				err error
			)
			select {
			case <-answered:
				return
			case <-watch.C:
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskRenewEvery)
				now, err = tc.store.GetTask(rctx, task.ClientID, taskID)
				cancel()
				if err != nil {
					continue // the renewal says what is wrong
				}
			case <-renew.C:
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskRenewEvery)
				now, err = tc.store.RenewTask(rctx, taskID, runner, taskLeaseTTL, sink.take())
				cancel()
			}
			switch {
			case errors.Is(err, sessions.ErrLeaseLost):
				lostLease = true
				stopRun()
				return
			case err != nil:
				s.log.Warn("renew task lease", "task_id", taskID, "error", err)
			case now.Status != sessions.TaskWorking:
				// A tasks/cancel, or a sweep that failed the task while this
				// runner stalled: either way its turn must stop.
				reason := conversation.ReasonTaskCancel
				if now.Status != sessions.TaskCancelled {
					reason = conversation.ReasonRunnerStopped
				}
				if !line.Cancel(requestID, reason) {
					commit.Cancel(&conversation.CancelledError{Reason: reason})
				}
				return
			}
		}
	})
	reply, rerr := line.Send(runCtx, turn, conversation.SendOptions{
		Observe: fwd.observe, OnCancel: prog.close, Commit: commit, Answered: answered,
		EndReason: func() string { return conversation.ReasonRunnerStopped }, Refused: conversation.ReasonTaskCancel,
	})
	fwd.finish(errors.Is(rerr, conversation.ErrCancelled))
	close(answered)
	wg.Wait()

	if errors.Is(rerr, conversation.ErrCancelled) {
		if lostLease {
			return fmt.Errorf("mcpserver: task %q: the runner lost its lease", taskID)
		}
		if ctx.Err() != nil {
			return errors.Join(ctx.Err(), finish(sessions.TaskFailed, TaskAbandonedMessage, failedOutcome()))
		}
		// A tasks/cancel won: the task is cancelled in the store already.
		return finish(sessions.TaskCancelled, "", taskOutcome{Error: errRequestCancelled})
	}
	res, perr := promptAnswer(reply, rerr)
	var werr *jsonrpc.Error
	switch {
	case perr != nil && errors.As(perr, &werr):
		return finish(sessions.TaskFailed, werr.Message, taskOutcome{Error: werr})
	case perr != nil:
		s.log.Error("task turn failed", "task_id", taskID, "error", perr)
		return finish(sessions.TaskFailed, contracts.TextToolExecutionFailed, failedOutcome())
	}
	body := mustResult(res)
	if res.IsError {
		return finish(sessions.TaskFailed, statusText(res), taskOutcome{Result: body})
	}
	return finish(sessions.TaskCompleted, "", taskOutcome{Result: body})
}

// statusText is the first text of an isError result, clipped, for the
// task's statusMessage.
func statusText(res *mcp.CallToolResult) string {
	for _, ct := range res.Content {
		if t, ok := ct.(*mcp.TextContent); ok {
			return clip.String(t.Text, 256)
		}
	}
	return ""
}

// progressSink keeps the latest progress of a task's turn until the lease
// keeper stores it (at most once per renewal: the throttle).
type progressSink struct {
	mu      sync.Mutex
	latest  json.RawMessage
	pending bool
}

func (p *progressSink) notify(_ context.Context, n *mcp.ProgressNotificationParams) error {
	data, err := json.Marshal(storedProgress{Progress: n.Progress, Message: n.Message})
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.latest, p.pending = data, true
	p.mu.Unlock()
	return nil
}

// take returns the progress not yet stored, or nil.
func (p *progressSink) take() json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.pending {
		return nil
	}
	p.pending = false
	return p.latest
}
