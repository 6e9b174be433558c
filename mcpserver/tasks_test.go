package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/internal/stdio"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/sessions"
)

// taskEnv is an env whose server supports tasks: Start runs the task's
// runner on a goroutine of the same server (the fake turns), counted in
// runners. Task ids are task_0001, task_0002, ...
type taskEnv struct {
	*env
	tasks   *memTasks
	runners sync.WaitGroup
	// runErrs receives RunTask's error of every runner.
	mu      sync.Mutex
	runErrs []error
}

func newTaskEnv(t testing.TB, tweak func(*TaskOptions)) *taskEnv {
	t.Helper()
	te, err := newTaskEnvErr(tweak, nil)
	if err != nil {
		t.Fatal(err)
	}
	return te
}

func newTaskEnvErr(tweak func(*TaskOptions), envTweak func(*envConfig)) (*taskEnv, error) {
	te := &taskEnv{tasks: newMemTasks(time.Now)}
	opts := &TaskOptions{Store: te.tasks, Start: func(_ context.Context, id, runner string) error {
		te.runners.Go(func() {
			err := te.srv.runTask(context.Background(), id, runner)
			te.mu.Lock()
			te.runErrs = append(te.runErrs, err)
			te.mu.Unlock()
		})
		return nil
	}}
	if tweak != nil {
		tweak(opts)
	}
	e, err := newEnv(func(o *envConfig) {
		o.Tasks = opts
		if envTweak != nil {
			envTweak(o)
		}
	})
	if err != nil {
		return nil, err
	}
	te.env = e
	var n int
	var mu sync.Mutex
	e.srv.newTaskID = func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("task_%04d", n)
	}
	return te, nil
}

// call sends one request on a connection of te's server the way the
// stdio connection does, without a wire: the handler of a tasks/* method.
func (te *taskEnv) conn() *connection {
	c, err := newConnection(te.srv)
	if err != nil {
		panic(err)
	}
	return c
}

func rawParams(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// The tasks/cancel of a client and the runner's commit point race: exactly
// one wins in the store, and each side sees the truth: a cancel that won
// answers the task cancelled and no reply is ever written; a cancel that
// lost answers -32602 and the task completes with the reply stored, as
// tasks/result returns it.
func TestTaskCancelCommitRace(t *testing.T) {
	te := newTaskEnv(t, func(o *TaskOptions) { o.Start = func(context.Context, string, string) error { return nil } })
	raceCancelCommit(t, te, te.tasks, 2000)
}

// raceCancelCommit runs rounds of a task's runner against a tasks/cancel
// over store, and checks each round's truth.
func raceCancelCommit(t *testing.T, te *taskEnv, store sessions.TaskStore, rounds int) {
	te.srv.tasks.store = store
	c := te.conn()
	// The cancels are spread over a whole uncancelled run, measured first,
	// so that both sides win in many rounds whatever the store's speed.
	var span time.Duration
	for i := range 3 {
		id := fmt.Sprintf("warm_%d", i)
		req := rawParams(taskRequest{RequestID: float64(i), SessionID: "mcp_" + id, NewSession: true, Prompt: "hello"})
		if _, err := store.CreateTask(t.Context(), sessions.NewTask{ID: id, ClientID: testClientID, Request: req, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := te.srv.runTask(t.Context(), id, "runner"); err != nil {
			t.Fatal(err)
		}
		span = max(span, time.Since(start))
	}
	won, lost := 0, 0
	for i := range rounds {
		id := fmt.Sprintf("race_%d", i)
		sid := fmt.Sprintf("mcp_race_%d", i)
		req := rawParams(taskRequest{RequestID: float64(i), SessionID: sid, NewSession: true, Prompt: "hello"})
		if _, err := store.CreateTask(t.Context(), sessions.NewTask{ID: id, ClientID: testClientID, Request: req, TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		var (
			wg      sync.WaitGroup
			res     json.RawMessage
			cerr    *jsonrpc.Error
			runErr  error
			started = make(chan struct{})
		)
		wg.Go(func() {
			close(started)
			runErr = te.srv.runTask(t.Context(), id, "runner")
		})
		<-started
		time.Sleep(time.Duration(mathrand.Int64N(int64(span) + 1)))
		res, cerr = c.tasksCancel(t.Context(), &stdio.Request{}, rawParams(map[string]string{"taskId": id}))
		wg.Wait()
		// A cancel before the runner's claim leaves it nothing to run.
		if runErr != nil && !(cerr == nil && errors.Is(runErr, sessions.ErrTaskDone)) {
			t.Fatalf("round %d: runTask: %v", i, runErr)
		}
		task, err := store.GetTask(t.Context(), testClientID, id)
		if err != nil {
			t.Fatal(err)
		}
		var head sessions.Message
		if b, err := te.store.Branch(t.Context(), sid); err == nil && len(b) > 0 {
			head = b[len(b)-1]
		}
		if cerr == nil {
			won++
			var got taskJSON
			if err := json.Unmarshal(res, &got); err != nil || got.Status != sessions.TaskCancelled {
				t.Fatalf("round %d: a winning cancel answered %s", i, res)
			}
			if task.Status != sessions.TaskCancelled || task.Committing {
				t.Fatalf("round %d: cancel won, yet the task is %s (committing %v)", i, task.Status, task.Committing)
			}
			if head.Role == sessions.RoleAssistant {
				t.Fatalf("round %d: cancel won, yet the turn's reply was written", i)
			}
		} else {
			lost++
			if cerr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(cerr.Message, "cannot cancel") {
				t.Fatalf("round %d: a losing cancel answered %+v", i, cerr)
			}
			if task.Status != sessions.TaskCompleted {
				t.Fatalf("round %d: cancel lost, yet the task is %s", i, task.Status)
			}
			if head.Role != sessions.RoleAssistant || head.Content != "echo: hello" {
				t.Fatalf("round %d: cancel lost, yet the head is %+v", i, head)
			}
		}
	}
	t.Logf("%d rounds: %d cancels won (nothing written), %d lost (reply stored and the task completed)", rounds, won, lost)
}

// Another client's server sees none of a client's tasks: get, result and
// cancel answer -32602 as for an unknown task, and list is empty.
func TestTaskClientIsolation(t *testing.T) {
	te := newTaskEnv(t, func(o *TaskOptions) { o.Start = func(context.Context, string, string) error { return nil } })
	if _, err := te.tasks.CreateTask(t.Context(), sessions.NewTask{ID: "task_a", ClientID: testClientID, Request: rawParams(taskRequest{SessionID: "s", Prompt: "p"}), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	other := "fedcba9876543210"
	speaker, err := authz.NewMCPClient(other, testPrincipal, authz.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Conversations: te.conv, Speaker: speaker,
		Tasks: &TaskOptions{Store: te.tasks, Start: func(context.Context, string, string) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := newConnection(srv)
	if err != nil {
		t.Fatal(err)
	}
	p := rawParams(map[string]string{"taskId": "task_a"})
	for name, h := range c.taskHandlers() {
		if name == "tasks/list" {
			res, err := h(t.Context(), &stdio.Request{}, nil)
			if err != nil || string(res) != `{"tasks":[]}` {
				t.Errorf("tasks/list of another client = %s, %v; want no tasks", res, err)
			}
			continue
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		res, err := h(ctx, &stdio.Request{}, p)
		cancel()
		if err == nil || err.Code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Message, "task not found") {
			t.Errorf("%s of another client's task = %s, %+v; want -32602 task not found", name, res, err)
		}
	}
	if task, _ := te.tasks.raw("task_a"); task.Status != sessions.TaskWorking {
		t.Errorf("another client's tasks/cancel changed the task: %s", task.Status)
	}
}

// A requested ttl is clamped to [MinTaskTTL, MaxTTL]; none gives DefaultTTL.
func TestTaskTTLClamp(t *testing.T) {
	tc, err := newTaskConfig(&TaskOptions{Store: newMemTasks(time.Now), Start: func(context.Context, string, string) error { return nil },
		DefaultTTL: 2 * time.Hour, MaxTTL: 3 * time.Hour}, false)
	if err != nil {
		t.Fatal(err)
	}
	ms := func(f float64) *float64 { return &f }
	for _, c := range []struct {
		in   *float64
		want time.Duration
	}{
		{nil, 2 * time.Hour},
		{ms(0), MinTaskTTL},
		{ms(10), MinTaskTTL},
		{ms(60000), time.Minute},
		{ms(1e300), 3 * time.Hour},
		{ms(float64(3*time.Hour/time.Millisecond) + 1), 3 * time.Hour},
	} {
		if got := tc.ttl(c.in); got != c.want {
			t.Errorf("ttl(%v) = %s, want %s", c.in, got, c.want)
		}
	}
	def, err := newTaskConfig(&TaskOptions{Store: newMemTasks(time.Now), Start: func(context.Context, string, string) error { return nil }}, false)
	if err != nil {
		t.Fatal(err)
	}
	if def.ttl(nil) != DefaultTaskTTL || def.maxTTL != DefaultTaskMaxTTL || def.maxWorking != DefaultTaskMaxWorking || def.pollInterval != DefaultTaskPollInterval {
		t.Errorf("defaults = ttl %s max %s working %d poll %s", def.ttl(nil), def.maxTTL, def.maxWorking, def.pollInterval)
	}
	if _, err := newTaskConfig(&TaskOptions{Store: newMemTasks(time.Now)}, false); err == nil {
		t.Error("TaskOptions without Start accepted for a server")
	}
	if _, err := newTaskConfig(&TaskOptions{Start: func(context.Context, string, string) error { return nil }}, false); err == nil {
		t.Error("TaskOptions without Store accepted")
	}
}

// At MaxWorking working tasks a client's next task is refused with -32600
// and nothing is created; a task that ends frees its place.
func TestTaskLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te := newTaskEnv(t, func(o *TaskOptions) { o.MaxWorking = 2 })
		w := startWire(t.Context(), t, te.env)
		for _, l := range handshake {
			w.send(l)
		}
		for i := 1; i <= 3; i++ {
			w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"block"},"task":{}}}`, i))
			synctest.Wait()
		}
		frames := w.take()
		last := string(frames[len(frames)-1])
		if !strings.Contains(last, `"id":3`) || !strings.Contains(last, `"code":-32600`) || !strings.Contains(last, "too many working tasks") {
			t.Errorf("third task answered %s, want -32600 too many working tasks", last)
		}
		if _, ok := te.tasks.raw("task_0003"); ok {
			t.Error("a refused task was created")
		}
		w.send(`{"jsonrpc":"2.0","id":4,"method":"tasks/cancel","params":{"taskId":"task_0001"}}`)
		synctest.Wait()
		w.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"block"},"task":{}}}`)
		synctest.Wait()
		frames = w.take()
		if got := string(frames[len(frames)-1]); !strings.Contains(got, `"id":5`) || !strings.Contains(got, `"status":"working"`) {
			t.Errorf("a task after a cancel freed a place answered %s", got)
		}
		for _, id := range []string{"task_0002", "task_0004"} {
			w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"c-%s","method":"tasks/cancel","params":{"taskId":%q}}`, id, id))
		}
		synctest.Wait()
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
		te.runners.Wait()
	})
}

// A server without task support ignores params.task (the protocol's rule
// for a receiver that declares none): the call is answered as a plain
// prompt_send, and tasks/* are unknown methods.
func TestNoTasksIgnoresTaskParams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := newEnv(nil)
		if err != nil {
			t.Fatal(err)
		}
		w := startWire(t.Context(), t, e)
		for _, l := range handshake {
			w.send(l)
		}
		synctest.Wait()
		init := string(w.take()[0])
		if strings.Contains(init, `"tasks"`) {
			t.Errorf("initialize without task support advertises tasks: %s", init)
		}
		w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		w.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hello"},"task":{"ttl":1000}}}`)
		w.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"x"}}`)
		synctest.Wait()
		frames := byID(w.take())
		if len(frames) != 3 {
			t.Fatalf("got %d answers, want 3", len(frames))
		}
		if strings.Contains(frames["1"], `"execution":`) {
			t.Errorf("tools/list without task support has an execution member: %s", frames["1"])
		}
		if !strings.Contains(frames["2"], `echo: hello`) || strings.Contains(frames["2"], `"task"`) {
			t.Errorf("prompt_send with params.task on a server without tasks = %s, want the plain result", frames["2"])
		}
		if !strings.Contains(frames["3"], `"code":-32601`) {
			t.Errorf("tasks/get without task support = %s, want -32601", frames["3"])
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A runner built for another client refuses the task and fails it: it
// never runs a turn with an authority the task was not created under.
func TestRunTaskRefusesOtherClient(t *testing.T) {
	te := newTaskEnv(t, func(o *TaskOptions) { o.Start = func(context.Context, string, string) error { return nil } })
	if _, err := te.tasks.CreateTask(t.Context(), sessions.NewTask{ID: "task_x", ClientID: "fedcba9876543210", Request: rawParams(taskRequest{SessionID: "s", NewSession: true, Prompt: "p"}), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := te.srv.runTask(t.Context(), "task_x", "r"); err == nil || !strings.Contains(err.Error(), "another client") {
		t.Fatalf("runTask of another client's task = %v", err)
	}
	if task, _ := te.tasks.raw("task_x"); task.Status != sessions.TaskFailed {
		t.Errorf("task after a refused run is %s, want failed", task.Status)
	}
	if len(te.turns.calls()) != 0 {
		t.Error("a turn ran for another client's task")
	}
}

// A runner whose context ends mid-turn stops the turn before its commit
// point and fails the task: never left working, nothing written.
func TestRunTaskStoppedFailsTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te := newTaskEnv(t, func(o *TaskOptions) { o.Start = func(context.Context, string, string) error { return nil } })
		if _, err := te.tasks.CreateTask(t.Context(), sessions.NewTask{ID: "task_s", ClientID: testClientID, Request: rawParams(taskRequest{RequestID: 7, SessionID: "mcp_s", NewSession: true, Prompt: "block"}), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- te.srv.runTask(ctx, "task_s", "r") }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("runTask after its context ended = %v", err)
		}
		task, _ := te.tasks.raw("task_s")
		if task.Status != sessions.TaskFailed || task.StatusMessage != TaskAbandonedMessage {
			t.Errorf("task = %s %q, want failed with the abandoned message", task.Status, task.StatusMessage)
		}
		if te.store.hasSession("mcp_s") {
			t.Error("the stopped task's new session was left behind")
		}
		if got := te.store.auditOf(sessions.AuditRequestCancelled); len(got) != 1 || got[0]["reason"] != conversation.ReasonRunnerStopped || got[0]["task_id"] != "task_s" {
			t.Errorf("cancel audit = %v", got)
		}
	})
}

// SweepTasks fails a task whose runner lease lapsed with the fixed message
// and a failed prompt_send's result, and purges expired ones.
func TestSweepTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tasks := newMemTasks(time.Now)
		ctx := t.Context()
		for _, id := range []string{"a", "b"} {
			if _, err := tasks.CreateTask(ctx, sessions.NewTask{ID: id, ClientID: testClientID, Request: json.RawMessage(`{}`), TTL: time.Minute}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tasks.ClaimTask(ctx, "a", "r", 30*time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(31 * time.Second)
		te := newTaskEnv(t, nil)
		o := SweepOptions{Store: tasks, Conversations: te.conv, Speaker: testSpeaker, Unclaimed: time.Hour}
		r, err := SweepTasks(ctx, o)
		if err != nil || r != (SweepResult{Failed: 1}) {
			t.Fatalf("SweepTasks = %+v, %v; want 1 failed", r, err)
		}
		a, _ := tasks.raw("a")
		if a.Status != sessions.TaskFailed || a.StatusMessage != TaskAbandonedMessage || !strings.Contains(string(a.Result), contracts.TextToolExecutionFailed) {
			t.Errorf("swept task = %+v", a)
		}
		time.Sleep(time.Minute)
		if r, _ = SweepTasks(ctx, o); r.Purged != 1 {
			t.Errorf("purged %d expired tasks, want 1", r.Purged)
		}
	})
}

// byID maps the responses among frames by their raw id (numbers as
// written, strings quoted).
func byID(frames [][]byte) map[string]string {
	out := map[string]string{}
	for _, f := range frames {
		var head struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(f, &head) == nil && head.ID != nil {
			out[string(head.ID)] = string(f)
		}
	}
	return out
}

// The connection that created a task with a progressToken relays the
// progress its runner stores as notifications/progress, and the status
// change it then observes (a tasks/cancel) as notifications/tasks/status;
// the runner sees the cancel at its next renewal, stops the turn before
// its commit point and writes the cancel's audit records.
func TestTaskProgressStatusAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te := newTaskEnv(t, nil)
		w := startWire(t.Context(), t, te.env)
		for _, l := range handshake {
			w.send(l)
		}
		w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"block"},"task":{},"_meta":{"progressToken":"tok"}}}`)
		synctest.Wait()
		time.Sleep(taskRenewEvery + DefaultTaskPollInterval) // the runner stores, the watcher relays
		synctest.Wait()
		var sawProgress bool
		for _, f := range w.take() {
			if strings.Contains(string(f), `"method":"notifications/progress"`) {
				sawProgress = strings.Contains(string(f), `"progressToken":"tok"`) && strings.Contains(string(f), "turn started")
			}
		}
		if !sawProgress {
			t.Error("no notifications/progress with the task's progressToken and the turn's progress")
		}
		w.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/cancel","params":{"taskId":"task_0001"}}`)
		synctest.Wait()
		time.Sleep(taskRenewEvery + DefaultTaskPollInterval)
		synctest.Wait()
		var sawStatus bool
		for _, f := range w.take() {
			if strings.Contains(string(f), `"method":"notifications/tasks/status"`) && strings.Contains(string(f), `"status":"cancelled"`) {
				sawStatus = true
			}
		}
		if !sawStatus {
			t.Error("no notifications/tasks/status for the cancelled task")
		}
		te.runners.Wait() // the runner saw the cancel and stopped
		if got := te.store.auditOf(AuditTaskCancelled); len(got) != 1 || got[0]["task_id"] != "task_0001" {
			t.Errorf("%s records = %v", AuditTaskCancelled, got)
		}
		if got := te.store.auditOf(sessions.AuditRequestCancelled); len(got) != 1 || got[0]["reason"] != conversation.ReasonTaskCancel || got[0]["task_id"] != "task_0001" {
			t.Errorf("%s records = %v", sessions.AuditRequestCancelled, got)
		}
		if got := te.store.auditOf(sessions.AuditPromptRequested); len(got) != 1 || got[0]["task_id"] != "task_0001" {
			t.Errorf("%s records = %v", sessions.AuditPromptRequested, got)
		}
		if got := te.store.auditOf(AuditTaskCreated); len(got) != 1 || got[0]["task_id"] != "task_0001" {
			t.Errorf("%s records = %v", AuditTaskCreated, got)
		}
		if te.store.hasSession("mcp_00000000000000000000000000000001") {
			t.Error("the cancelled task's new session was left behind")
		}
		if te.store.leaseHeld("mcp_00000000000000000000000000000001") {
			t.Error("the cancelled task's turn still holds the session lease")
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
	})
}

// runOneTask sends one task-augmented prompt_send (request id "a") on a
// wire to te's server, waits for its runner to end, and calls check.
func runOneTask(t *testing.T, te *taskEnv, check func()) {
	w := startWire(t.Context(), t, te.env)
	for _, l := range handshake {
		w.send(l)
	}
	w.send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hello"},"task":{}}}`)
	synctest.Wait()
	te.runners.Wait()
	check()
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
}

// A task's runner writes the same audit as a plain prompt_send, with the
// task id: the completed turn's record and the task's terminal status.
func TestTaskAuditCompleted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te := newTaskEnv(t, nil)
		runOneTask(t, te, func() {
			if got := te.store.auditOf(sessions.AuditPromptCompleted); len(got) != 1 || got[0]["task_id"] != "task_0001" || got[0]["request_id"] != "a" {
				t.Errorf("%s records = %v", sessions.AuditPromptCompleted, got)
			}
			if got := te.store.auditOf(AuditTaskFinished); len(got) != 1 || got[0]["status"] != sessions.TaskCompleted {
				t.Errorf("%s records = %v", AuditTaskFinished, got)
			}
		})
	})
}

// A task's answer path writes its task row three times: created (already
// claimed for the runner it is handed to), its commit point, its end. The
// runner takes the lease it was created with; it does not claim the task
// in a write of its own.
func TestTaskWritesOnItsAnswerPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te := newTaskEnv(t, nil)
		runOneTask(t, te, func() {
			want := []string{"CreateTask", "CommitTask", "FinishTask"}
			if got := te.tasks.writesOf("task_0001"); !slices.Equal(got, want) {
				t.Errorf("writes to the task = %v, want %v", got, want)
			}
			if task, _ := te.tasks.raw("task_0001"); task.Status != sessions.TaskCompleted {
				t.Errorf("task status %q, want %q", task.Status, sessions.TaskCompleted)
			}
		})
	})
}

// Fail closed: a task whose request record cannot be written is refused
// before anything is created or started.
func TestTaskAuditRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te, err := newTaskEnvErr(nil, refuseAudit)
		if err != nil {
			t.Fatal(err)
		}
		w := startWire(t.Context(), t, te.env)
		for _, l := range handshake {
			w.send(l)
		}
		w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hello"},"task":{}}}`)
		synctest.Wait()
		got := byID(w.take())["1"]
		if !strings.Contains(got, `"code":-32603`) || !strings.Contains(got, "audit_unavailable") {
			t.Errorf("task with its audit refused = %s", got)
		}
		if _, ok := te.tasks.raw("task_0001"); ok {
			t.Error("a task was created without its audit record")
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
	})
}

// tasks/result waits while the task works; a notifications/cancelled for
// it ends the wait with the cancellation error, and the task goes on.
func TestTaskResultWaitCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te := newTaskEnv(t, nil)
		w := startWire(t.Context(), t, te.env)
		for _, l := range handshake {
			w.send(l)
		}
		w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"block"},"task":{}}}`)
		synctest.Wait()
		w.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"task_0001"}}`)
		synctest.Wait()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := byID(w.take())["2"]; got != "" {
			t.Fatalf("tasks/result of a working task answered %s", got)
		}
		w.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
		synctest.Wait()
		got := byID(w.take())["2"]
		if !strings.Contains(got, `"code":0`) || !strings.Contains(got, "Request cancelled") {
			t.Errorf("tasks/result after notifications/cancelled = %q", got)
		}
		if task, _ := te.tasks.raw("task_0001"); task.Status != sessions.TaskWorking {
			t.Errorf("cancelling tasks/result changed the task: %s", task.Status)
		}
		w.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"task_0001"}}`)
		synctest.Wait()
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
		te.runners.Wait()
	})
}

// A runner that finds its task ended under it (a sweep failed it while
// the runner stalled) stops its turn before the commit point: nothing of
// the turn is written and the failure stands.
func TestRunTaskStopsWhenTaskEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te := newTaskEnv(t, func(o *TaskOptions) { o.Start = func(context.Context, string, string) error { return nil } })
		if _, err := te.tasks.CreateTask(t.Context(), sessions.NewTask{ID: "task_e", ClientID: testClientID, Request: rawParams(taskRequest{RequestID: 1, SessionID: "mcp_e", NewSession: true, Prompt: "block"}), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- te.srv.runTask(t.Context(), "task_e", "r") }()
		synctest.Wait()
		te.tasks.mu.Lock()
		te.tasks.tasks["task_e"].Status = sessions.TaskFailed
		te.tasks.mu.Unlock()
		if err := <-done; err != nil {
			t.Errorf("runTask of a task failed under it = %v", err)
		}
		if task, _ := te.tasks.raw("task_e"); task.Status != sessions.TaskFailed {
			t.Errorf("task = %s, want the sweep's failure to stand", task.Status)
		}
		if te.store.hasSession("mcp_e") {
			t.Error("the stopped turn's new session was left behind")
		}
		if got := te.store.auditOf(sessions.AuditRequestCancelled); len(got) != 1 || got[0]["reason"] != conversation.ReasonRunnerStopped {
			t.Errorf("cancel audit = %v", got)
		}
	})
}

// A prompt the task store cannot record is refused -32602 as a task, and
// no task exists.
func TestTaskPromptTooLarge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te := newTaskEnv(t, nil)
		w := startWire(t.Context(), t, te.env)
		for _, l := range handshake {
			w.send(l)
		}
		big := strings.Repeat("x", sessions.MaxTaskPayload)
		w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"` + big + `"},"task":{}}}`)
		synctest.Wait()
		got := byID(w.take())["1"]
		if !strings.Contains(got, `"code":-32602`) || !strings.Contains(got, "too large to keep as a task") {
			t.Errorf("a task with a prompt over the store's bound = %.300s", got)
		}
		if _, ok := te.tasks.raw("task_0001"); ok {
			t.Error("a task was created")
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A tasks/cancel stops the runner's turn within a second, long before its
// next lease renewal: the runner does not outlive a cancel by seconds.
func TestRunTaskSeesACancelWithinASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te := newTaskEnv(t, func(o *TaskOptions) { o.Start = func(context.Context, string, string) error { return nil } })
		if _, err := te.tasks.CreateTask(t.Context(), sessions.NewTask{ID: "task_c", ClientID: testClientID, Request: rawParams(taskRequest{RequestID: 1, SessionID: "mcp_c", NewSession: true, Prompt: "block"}), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- te.srv.runTask(t.Context(), "task_c", "r") }()
		synctest.Wait()
		if _, err := te.tasks.CancelTask(t.Context(), testClientID, "task_c"); err != nil {
			t.Fatal(err)
		}
		cancelled := time.Now()
		if err := <-done; err != nil {
			t.Errorf("runTask of a cancelled task = %v", err)
		}
		if took := time.Since(cancelled); took > time.Second {
			t.Errorf("the runner stopped %s after the cancel, want within a second", took)
		}
	})
}

// A connection that did not create a task (a client that reconnected)
// sees the turn's latest stored progress as the task's statusMessage in
// tasks/get while it works, clipped; an ended task shows its own message.
func TestTaskGetShowsProgress(t *testing.T) {
	te := newTaskEnv(t, func(o *TaskOptions) { o.Start = func(context.Context, string, string) error { return nil } })
	ctx := t.Context()
	if _, err := te.tasks.CreateTask(ctx, sessions.NewTask{ID: "task_p", ClientID: testClientID, Request: rawParams(taskRequest{SessionID: "s", Prompt: "p"}), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if _, err := te.tasks.ClaimTask(ctx, "task_p", "r", time.Minute); err != nil {
		t.Fatal(err)
	}
	get := func() taskJSON {
		t.Helper()
		res, rerr := te.conn().tasksGet(ctx, &stdio.Request{}, rawParams(map[string]string{"taskId": "task_p"}))
		if rerr != nil {
			t.Fatal(rerr)
		}
		var got taskJSON
		if err := json.Unmarshal(res, &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := get(); got.StatusMessage != "" {
		t.Errorf("statusMessage before any progress = %q, want none", got.StatusMessage)
	}
	progress := rawParams(storedProgress{Progress: 3, Message: "tool memory_search started"})
	if _, err := te.tasks.RenewTask(ctx, "task_p", "r", time.Minute, progress); err != nil {
		t.Fatal(err)
	}
	if got := get(); got.StatusMessage != "tool memory_search started" {
		t.Errorf("statusMessage while working = %q, want the stored progress", got.StatusMessage)
	}
	long := rawParams(storedProgress{Progress: 4, Message: strings.Repeat("é", 1000)})
	if _, err := te.tasks.RenewTask(ctx, "task_p", "r", time.Minute, long); err != nil {
		t.Fatal(err)
	}
	if got := get(); len(got.StatusMessage) > maxProgressStatus || !strings.HasPrefix(got.StatusMessage, "éé") {
		t.Errorf("statusMessage of a long progress message is %d bytes, want at most %d", len(got.StatusMessage), maxProgressStatus)
	}
	if _, err := te.tasks.FinishTask(ctx, "task_p", "r", sessions.TaskCompleted, "", rawParams(taskOutcome{Result: mustResult(executionFailed())})); err != nil {
		t.Fatal(err)
	}
	if got := get(); got.StatusMessage != "" {
		t.Errorf("statusMessage of a completed task = %q, want none", got.StatusMessage)
	}
}

// tasks/result of a task whose runner reports its end (TaskOptions.Ended)
// answers when the report comes, not at its next read of the store: with
// the polls an hour apart, the answer is there as soon as the report is.
// The creating connection's watch sends the status change then too.
func TestTaskResultWakesOnTheRunnersReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		ended := map[string]chan struct{}{}
		var handed string
		te := newTaskEnv(t, func(o *TaskOptions) {
			o.Start = func(_ context.Context, _, runner string) error { handed = runner; return nil } // the test runs it
			o.PollInterval = time.Hour
			o.Ended = func(id string) <-chan struct{} {
				mu.Lock()
				defer mu.Unlock()
				if ended[id] == nil {
					ended[id] = make(chan struct{})
				}
				return ended[id]
			}
		})
		w := startWire(t.Context(), t, te.env)
		for _, l := range handshake {
			w.send(l)
		}
		w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hello"},"task":{}}}`)
		synctest.Wait()
		w.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"task_0001"}}`)
		synctest.Wait()
		if err := te.srv.runTask(t.Context(), "task_0001", handed); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if got := byID(w.take())["2"]; got != "" {
			t.Fatalf("tasks/result answered before the runner's report, at a poll: %s", got)
		}
		mu.Lock()
		close(ended["task_0001"])
		mu.Unlock()
		synctest.Wait()
		frames := w.take()
		if got := byID(frames)["2"]; !strings.Contains(got, `echo: hello`) || !strings.Contains(got, `related-task":{"taskId":"task_0001"}`) {
			t.Errorf("tasks/result after the runner's report = %q, want the task's result", got)
		}
		status := false
		for _, f := range frames {
			status = status || strings.Contains(string(f), `"notifications/tasks/status"`) && strings.Contains(string(f), `"completed"`)
		}
		if !status {
			t.Errorf("no notifications/tasks/status with the completed task after the report; frames:\n%s", frames)
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
	})
}

// A runner's TaskOptions.Finished is called once, as soon as its task is
// terminal in the store and before the task's mcp.task.finished record:
// the runner reports the end with it, the record follows.
func TestRunTaskFinishedComesBeforeTheRecord(t *testing.T) {
	var te *taskEnv
	type call struct {
		id, status string
		records    int
	}
	var calls []call
	te = newTaskEnv(t, func(o *TaskOptions) {
		o.Start = func(context.Context, string, string) error { return nil }
		o.Finished = func(id string) {
			task, _ := te.tasks.raw(id)
			calls = append(calls, call{id, task.Status, len(te.store.auditOf(AuditTaskFinished))})
		}
	})
	if _, err := te.tasks.CreateTask(t.Context(), sessions.NewTask{ID: "task_f", ClientID: testClientID, Request: rawParams(taskRequest{RequestID: 1, SessionID: "mcp_f", NewSession: true, Prompt: "hello"}), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := te.srv.runTask(t.Context(), "task_f", "r"); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] != (call{"task_f", sessions.TaskCompleted, 0}) {
		t.Errorf("Finished calls = %+v, want one for task_f, completed, before its record", calls)
	}
	if got := te.store.auditOf(AuditTaskFinished); len(got) != 1 {
		t.Errorf("%s records = %v, want one after Finished", AuditTaskFinished, got)
	}
}

// A task whose runner cannot be started is answered created and failed at
// once, in the name of the runner it was created claimed for.
func TestTaskWhoseRunnerCannotStartFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		te := newTaskEnv(t, func(o *TaskOptions) {
			o.Start = func(context.Context, string, string) error { return errors.New("no runner slot") }
		})
		w := startWire(t.Context(), t, te.env)
		for _, l := range handshake {
			w.send(l)
		}
		w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hello"},"task":{}}}`)
		synctest.Wait()
		if got := byID(w.take())["1"]; !strings.Contains(got, `"status":"failed"`) {
			t.Errorf("CreateTaskResult = %s, want the task failed", got)
		}
		task, _ := te.tasks.raw("task_0001")
		if task.Status != sessions.TaskFailed || task.StatusMessage != TaskAbandonedMessage {
			t.Errorf("stored task = %s %q, want failed %q", task.Status, task.StatusMessage, TaskAbandonedMessage)
		}
		if got := te.store.auditOf(AuditTaskFinished); len(got) != 1 || got[0]["status"] != sessions.TaskFailed {
			t.Errorf("%s records = %v", AuditTaskFinished, got)
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
	})
}
