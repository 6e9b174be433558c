package storetest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

// taskTests pin sessions.TaskStore: the durable tasks and their two
// compare-and-set commit points, on one handle and across two (as two
// processes would hold).
var taskTests = []test{
	{"CreateGet", testTaskCreateGet},
	{"ListPaging", testTaskListPaging},
	{"ClientIsolation", testTaskIsolation},
	{"Cap", testTaskCap},
	{"CapRaceTwoHandles", testTaskCapRace},
	{"CancelCommitRaceTwoHandles", testTaskCancelCommitRace},
	{"ClaimRenewProgress", testTaskClaimRenew},
	{"CreateClaimed", testTaskCreateClaimed},
	{"LeaseLapseTakeover", testTaskLeaseLapse},
	{"FinishRules", testTaskFinishRules},
	{"FailAbandoned", testTaskFailAbandoned},
	{"ExpiryAndPurge", testTaskExpiry},
	{"TextAndSize", testTaskTextAndSize},
}

// CancelCommitRounds is how many rounds testTaskCancelCommitRace races a
// client's CancelTask against the runner's CommitTask.
const CancelCommitRounds = 300

// tasksOf is s as a TaskStore; a backend that runs the suite must
// implement it.
func tasksOf(t *testing.T, s sessions.Store) sessions.TaskStore {
	t.Helper()
	ts, ok := s.(sessions.TaskStore)
	if !ok {
		t.Fatalf("storetest: %T does not implement sessions.TaskStore", s)
	}
	return ts
}

func (h *harness) tasks(t *testing.T) sessions.TaskStore {
	t.Helper()
	return tasksOf(t, h.store(t))
}

func (h *harness) taskPair(t *testing.T) (a, b sessions.TaskStore) {
	t.Helper()
	sa, sb := h.pair(t)
	return tasksOf(t, sa), tasksOf(t, sb)
}

var taskRequest = json.RawMessage(`{"name": "prompt_send",  "arguments": {"session_id": "s", "text": "hi"}}`)

func newTask(id, client string) sessions.NewTask {
	return sessions.NewTask{ID: id, ClientID: client, Request: taskRequest, TTL: time.Hour}
}

func mustCreateTask(t *testing.T, s sessions.TaskStore, in sessions.NewTask) sessions.Task {
	t.Helper()
	got, err := s.CreateTask(ctxT(t), in)
	noErr(t, err, "CreateTask(%q)", in.ID)
	return got
}

func mustGetTask(t *testing.T, s sessions.TaskStore, client, id string) sessions.Task {
	t.Helper()
	got, err := s.GetTask(ctxT(t), client, id)
	noErr(t, err, "GetTask(%q, %q)", client, id)
	return got
}

func mustClaim(t *testing.T, s sessions.TaskStore, id, runner string, ttl time.Duration) sessions.Task {
	t.Helper()
	got, err := s.ClaimTask(ctxT(t), id, runner, ttl)
	noErr(t, err, "ClaimTask(%q, %q)", id, runner)
	return got
}

func wantTaskNotFound(t *testing.T, s sessions.TaskStore, client, id string) {
	t.Helper()
	_, err := s.GetTask(ctxT(t), client, id)
	wantErr(t, fmt.Sprintf("GetTask(%q, %q)", client, id), err, sessions.ErrNotFound)
}

func listIDs(t *testing.T, s sessions.TaskStore, client string) []string {
	t.Helper()
	page, err := s.ListTasks(ctxT(t), client, "", sessions.MaxTaskPage)
	noErr(t, err, "ListTasks(%q)", client)
	return pluck(page.Tasks, func(tk sessions.Task) string { return tk.ID })
}

// eventually polls cond every 10 ms until it holds, failing after a
// generous bound.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after 30s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testTaskCreateGet(t *testing.T, h *harness) {
	s := h.tasks(t)
	ctx := ctxT(t)
	before := time.Now()
	got := mustCreateTask(t, s, newTask("t1", "c1"))
	want := sessions.Task{ID: "t1", ClientID: "c1", Status: sessions.TaskWorking, Request: taskRequest,
		CreatedAt: got.CreatedAt, UpdatedAt: got.CreatedAt, TTL: time.Hour}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("CreateTask (-want +got):\n%s", diff)
	}
	if got.CreatedAt.Before(before.Add(-time.Minute)) || got.CreatedAt.After(time.Now().Add(time.Minute)) {
		t.Errorf("CreatedAt = %v, want about now (%v)", got.CreatedAt, before)
	}
	read := mustGetTask(t, s, "c1", "t1")
	if diff := cmp.Diff(got, read, cmpOpts...); diff != "" {
		t.Errorf("GetTask after CreateTask (-created +read):\n%s", diff)
	}
	if !bytes.Equal(read.Request, taskRequest) {
		t.Errorf("Request = %s, want it byte for byte: %s", read.Request, taskRequest)
	}

	dup := newTask("t1", "c2")
	_, err := s.CreateTask(ctx, dup)
	wantErr(t, "CreateTask of a taken id", err, sessions.ErrExists)
	if read := mustGetTask(t, s, "c1", "t1"); read.ClientID != "c1" {
		t.Errorf("after a refused duplicate the task belongs to %q, want c1", read.ClientID)
	}

	for name, in := range map[string]sessions.NewTask{
		"empty id":       {ClientID: "c1", Request: taskRequest, TTL: time.Hour},
		"empty client":   {ID: "bad1", Request: taskRequest, TTL: time.Hour},
		"zero ttl":       {ID: "bad2", ClientID: "c1", Request: taskRequest},
		"negative ttl":   {ID: "bad3", ClientID: "c1", Request: taskRequest, TTL: -time.Second},
		"no request":     {ID: "bad4", ClientID: "c1", TTL: time.Hour},
		"invalid JSON":   {ID: "bad5", ClientID: "c1", Request: json.RawMessage(`{"a":`), TTL: time.Hour},
		"invalid UTF-8":  {ID: "bad6", ClientID: "c1", Request: json.RawMessage("\"\xff\""), TTL: time.Hour},
		"id not UTF-8":   {ID: "bad\xff", ClientID: "c1", Request: taskRequest, TTL: time.Hour},
		"client not UTF": {ID: "bad7", ClientID: "c\xff", Request: taskRequest, TTL: time.Hour},
	} {
		if _, err := s.CreateTask(ctx, in); err == nil {
			t.Errorf("CreateTask with %s: no error, want one", name)
		}
	}
	if ids := listIDs(t, s, "c1"); !cmp.Equal(ids, []string{"t1"}) {
		t.Errorf("after refused creates ListTasks = %v, want [t1]", ids)
	}
	wantTaskNotFound(t, s, "c1", "nope")
}

func testTaskListPaging(t *testing.T, h *harness) {
	s := h.tasks(t)
	ctx := ctxT(t)
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("t%d", i)
		mustCreateTask(t, s, newTask(id, "c1"))
		want = append(want, id)
	}
	mustCreateTask(t, s, newTask("u0", "c2"))
	mustCreateTask(t, s, newTask("u1", "c2"))

	var got []string
	cursor, pages := "", 0
	for {
		page, err := s.ListTasks(ctx, "c1", cursor, 3)
		noErr(t, err, "ListTasks page %d", pages)
		pages++
		if len(page.Tasks) > 3 {
			t.Fatalf("page %d has %d tasks, want at most 3", pages, len(page.Tasks))
		}
		for _, tk := range page.Tasks {
			got = append(got, tk.ID)
			if tk.Request != nil || tk.Result != nil || tk.Progress != nil {
				t.Errorf("listed task %s carries its JSON documents, want none", tk.ID)
			}
			if tk.ClientID != "c1" || tk.Status != sessions.TaskWorking || tk.TTL != time.Hour || tk.CreatedAt.IsZero() {
				t.Errorf("listed task = %+v, want c1's working task with its ttl and times", tk)
			}
		}
		if page.Next == "" {
			break
		}
		if pages > 10 {
			t.Fatal("ListTasks never ends")
		}
		cursor = page.Next
	}
	if pages != 3 || !cmp.Equal(got, want) {
		t.Errorf("paged ListTasks = %v in %d pages, want %v in 3", got, pages, want)
	}
	for _, limit := range []int{0, -1, sessions.MaxTaskPage + 1} {
		page, err := s.ListTasks(ctx, "c1", "", limit)
		if err != nil || len(page.Tasks) != 7 || page.Next != "" {
			t.Errorf("ListTasks(limit %d) = %d tasks, next %q, %v; want all 7 on one page", limit, len(page.Tasks), page.Next, err)
		}
	}
	if ids := listIDs(t, s, "c2"); !cmp.Equal(ids, []string{"u0", "u1"}) {
		t.Errorf("ListTasks(c2) = %v, want [u0 u1]", ids)
	}
	if page, err := s.ListTasks(ctx, "c3", "", 10); err != nil || len(page.Tasks) != 0 || page.Next != "" {
		t.Errorf("ListTasks of a client without tasks = %+v, %v; want an empty last page", page, err)
	}
	for _, bad := range []string{"x", "t1.!!", "t1." + base64.RawURLEncoding.EncodeToString([]byte("12")),
		"t1." + base64.RawURLEncoding.EncodeToString([]byte("abc.t1")), "t1." + base64.RawURLEncoding.EncodeToString([]byte("1.a\x00b")),
		strings.Repeat("A", 5000)} {
		_, err := s.ListTasks(ctx, "c1", bad, 3)
		wantErr(t, fmt.Sprintf("ListTasks(cursor %q)", bad), err, sessions.ErrInvalidCursor)
	}
}

func testTaskIsolation(t *testing.T, h *harness) {
	s := h.tasks(t)
	ctx := ctxT(t)
	mustCreateTask(t, s, newTask("t", "c1"))
	wantTaskNotFound(t, s, "c2", "t")
	_, err := s.CancelTask(ctx, "c2", "t")
	wantErr(t, "CancelTask by another client", err, sessions.ErrNotFound)
	if got := mustGetTask(t, s, "c1", "t"); got.Status != sessions.TaskWorking {
		t.Errorf("after another client's cancel the task is %s, want working", got.Status)
	}
	if ids := listIDs(t, s, "c2"); len(ids) != 0 {
		t.Errorf("ListTasks by another client = %v, want nothing", ids)
	}
	_, err = s.CancelTask(ctx, "c1", "nope")
	wantErr(t, "CancelTask of an unknown task", err, sessions.ErrNotFound)
}

func testTaskCap(t *testing.T, h *harness) {
	s := h.tasks(t)
	ctx := ctxT(t)
	capped := func(id, client string) sessions.NewTask {
		in := newTask(id, client)
		in.MaxWorking = 2
		return in
	}
	mustCreateTask(t, s, capped("t1", "c1"))
	mustCreateTask(t, s, capped("t2", "c1"))
	_, err := s.CreateTask(ctx, capped("t3", "c1"))
	wantErr(t, "CreateTask over the cap", err, sessions.ErrTaskLimit)
	wantTaskNotFound(t, s, "c1", "t3")
	mustCreateTask(t, s, capped("u1", "c2")) // another client's own cap
	if _, err := s.CancelTask(ctx, "c1", "t1"); err != nil {
		t.Fatal(err)
	}
	mustCreateTask(t, s, capped("t3", "c1")) // a cancelled task frees its slot
	_, err = s.CreateTask(ctx, capped("t4", "c1"))
	wantErr(t, "CreateTask over the cap again", err, sessions.ErrTaskLimit)
	mustClaim(t, s, "t2", "r", time.Minute)
	if _, err := s.FinishTask(ctx, "t2", "r", sessions.TaskFailed, "boom", nil); err != nil {
		t.Fatal(err)
	}
	mustCreateTask(t, s, capped("t4", "c1"))  // so does a finished one
	mustCreateTask(t, s, newTask("t5", "c1")) // MaxWorking 0: no cap
}

func testTaskCapRace(t *testing.T, h *harness) {
	a, b := h.taskPair(t)
	stores := []sessions.TaskStore{a, b}
	const rounds, contenders, limit = 50, 8, 3
	for round := range rounds {
		client := fmt.Sprintf("c%d", round)
		created, results := race(t, contenders, fmt.Sprintf("round %d contender", round), sessions.ErrTaskLimit, func(i int) error {
			in := newTask(fmt.Sprintf("r%d-%d", round, i), client)
			in.MaxWorking = limit
			_, err := stores[i%2].CreateTask(ctxT(t), in)
			return err
		})
		if ids := listIDs(t, a, client); created != limit || len(ids) != limit {
			t.Fatalf("round %d: %d creates succeeded and %d tasks are listed, want exactly %d (results %v)", round, created, len(ids), limit, results)
		}
	}
}

func testTaskCancelCommitRace(t *testing.T, h *harness) {
	a, b := h.taskPair(t)
	ctx := ctxT(t)
	cancels, commits := 0, 0
	for round := range CancelCommitRounds {
		id := fmt.Sprintf("t%d", round)
		mustCreateTask(t, a, newTask(id, "c"))
		mustClaim(t, a, id, "runner", time.Minute)
		var cancelErr, commitErr error
		var cancelled, committed sessions.Task
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { <-start; cancelled, cancelErr = b.CancelTask(ctx, "c", id) })
		wg.Go(func() { <-start; committed, commitErr = a.CommitTask(ctx, id, "runner") })
		close(start)
		wg.Wait()
		final := mustGetTask(t, a, "c", id)
		switch {
		case cancelErr == nil && errors.Is(commitErr, sessions.ErrTaskDone):
			cancels++
			if final.Status != sessions.TaskCancelled || final.Committing || cancelled.Status != sessions.TaskCancelled {
				t.Fatalf("round %d: the cancel won but the task is %s (committing %v)", round, final.Status, final.Committing)
			}
			if committed.Status != sessions.TaskCancelled {
				t.Errorf("round %d: the refused commit returned a %q task, want the cancelled one", round, committed.Status)
			}
		case commitErr == nil && errors.Is(cancelErr, sessions.ErrTaskDone):
			commits++
			if final.Status != sessions.TaskWorking || !final.Committing || !committed.Committing {
				t.Fatalf("round %d: the commit won but the task is %s (committing %v)", round, final.Status, final.Committing)
			}
			if !cancelled.Committing {
				t.Errorf("round %d: the refused cancel returned a task not committing", round)
			}
		default:
			t.Fatalf("round %d: cancel error %v, commit error %v; want exactly one to win and the other ErrTaskDone", round, cancelErr, commitErr)
		}
	}
	t.Logf("%d rounds: the cancel won %d, the commit %d", CancelCommitRounds, cancels, commits)
}

// A task created with a Runner is claimed by it from its creation: it
// renews, commits and finishes without a ClaimTask of its own, and no other
// runner can take it while the lease lives.
func testTaskCreateClaimed(t *testing.T, h *harness) {
	s := h.tasks(t)
	ctx := ctxT(t)
	in := newTask("t", "c")
	in.Runner = "r1"
	for name, lease := range map[string]time.Duration{"zero lease": 0, "negative lease": -time.Second} {
		bad := in
		bad.Lease = lease
		if _, err := s.CreateTask(ctx, bad); err == nil {
			t.Errorf("CreateTask with a runner and a %s: no error, want one", name)
		}
	}
	in.Lease = time.Minute
	created := mustCreateTask(t, s, in)
	if created.Runner != "r1" || !created.RunnerExpiresAt.After(time.Now().Add(30*time.Second)) || created.RunnerExpiresAt.After(time.Now().Add(2*time.Minute)) {
		t.Errorf("created task = runner %q, lease until %v; want r1's, leased for a minute", created.Runner, created.RunnerExpiresAt)
	}
	if read := mustGetTask(t, s, "c", "t"); read.Runner != "r1" || !read.RunnerExpiresAt.Equal(created.RunnerExpiresAt) {
		t.Errorf("read task = runner %q, lease until %v; want as created: %q, %v", read.Runner, read.RunnerExpiresAt, created.Runner, created.RunnerExpiresAt)
	}
	_, err := s.ClaimTask(ctx, "t", "r2", time.Minute)
	wantErr(t, "ClaimTask of a task created claimed", err, sessions.ErrBusy)
	_, err = s.RenewTask(ctx, "t", "r1", time.Minute, nil)
	noErr(t, err, "RenewTask by the runner it was created for")
	_, err = s.CommitTask(ctx, "t", "r1")
	noErr(t, err, "CommitTask by the runner it was created for")
	done, err := s.FinishTask(ctx, "t", "r1", sessions.TaskCompleted, "", json.RawMessage(`{"ok":true}`))
	noErr(t, err, "FinishTask by the runner it was created for")
	if done.Status != sessions.TaskCompleted {
		t.Errorf("finished task status %q, want %q", done.Status, sessions.TaskCompleted)
	}
	// An unclaimed task stays unclaimed whatever Lease says.
	plain := newTask("u", "c")
	plain.Lease = time.Minute
	if got := mustCreateTask(t, s, plain); got.Runner != "" || !got.RunnerExpiresAt.IsZero() {
		t.Errorf("task created without a runner = runner %q, lease until %v; want unclaimed", got.Runner, got.RunnerExpiresAt)
	}
}

func testTaskClaimRenew(t *testing.T, h *harness) {
	s := h.tasks(t)
	ctx := ctxT(t)
	created := mustCreateTask(t, s, newTask("t", "c"))
	_, err := s.ClaimTask(ctx, "nope", "r1", time.Minute)
	wantErr(t, "ClaimTask of an unknown task", err, sessions.ErrNotFound)
	for name, call := range map[string]func() error{
		"claim, empty runner": func() error { _, err := s.ClaimTask(ctx, "t", "", time.Minute); return err },
		"claim, zero ttl":     func() error { _, err := s.ClaimTask(ctx, "t", "r1", 0); return err },
		"renew, empty runner": func() error { _, err := s.RenewTask(ctx, "t", "", time.Minute, nil); return err },
		"renew, zero ttl":     func() error { _, err := s.RenewTask(ctx, "t", "r1", 0, nil); return err },
		"commit, no runner":   func() error { _, err := s.CommitTask(ctx, "t", ""); return err },
	} {
		if err := call(); err == nil {
			t.Errorf("%s: no error, want one", name)
		}
	}
	_, err = s.RenewTask(ctx, "t", "r1", time.Minute, nil)
	wantErr(t, "RenewTask before a claim", err, sessions.ErrLeaseLost)
	_, err = s.CommitTask(ctx, "t", "r1")
	wantErr(t, "CommitTask before a claim", err, sessions.ErrLeaseLost)

	claimed := mustClaim(t, s, "t", "r1", time.Minute)
	if claimed.Runner != "r1" || claimed.Status != sessions.TaskWorking || !claimed.RunnerExpiresAt.After(time.Now().Add(30*time.Second)) {
		t.Errorf("claimed task = runner %q, %s, lease until %v; want r1's working task leased for a minute", claimed.Runner, claimed.Status, claimed.RunnerExpiresAt)
	}
	if !claimed.UpdatedAt.Equal(created.UpdatedAt) {
		t.Errorf("a claim changed UpdatedAt from %v to %v", created.UpdatedAt, claimed.UpdatedAt)
	}
	_, err = s.ClaimTask(ctx, "t", "r2", time.Minute)
	wantErr(t, "ClaimTask of a leased task", err, sessions.ErrBusy)
	mustClaim(t, s, "t", "r1", time.Minute) // the holder's claim renews
	_, err = s.RenewTask(ctx, "t", "r2", time.Minute, nil)
	wantErr(t, "RenewTask by another runner", err, sessions.ErrLeaseLost)

	progress := json.RawMessage(`{"progress": 3, "total": 10, "message": "reading"}`)
	time.Sleep(2 * time.Millisecond) // so that UpdatedAt moves on a coarse clock
	renewed, err := s.RenewTask(ctx, "t", "r1", time.Minute, progress)
	noErr(t, err, "RenewTask with progress")
	if !bytes.Equal(renewed.Progress, progress) || !renewed.UpdatedAt.After(created.UpdatedAt) {
		t.Errorf("renewed task = progress %s, updated %v; want %s, after %v", renewed.Progress, renewed.UpdatedAt, progress, created.UpdatedAt)
	}
	if got := mustGetTask(t, s, "c", "t"); !bytes.Equal(got.Progress, progress) {
		t.Errorf("GetTask progress = %s, want %s", got.Progress, progress)
	}
	kept, err := s.RenewTask(ctx, "t", "r1", time.Minute, nil)
	if err != nil || !bytes.Equal(kept.Progress, progress) || !kept.UpdatedAt.Equal(renewed.UpdatedAt) {
		t.Errorf("RenewTask without progress = progress %s, updated %v, %v; want both kept", kept.Progress, kept.UpdatedAt, err)
	}
	for name, p := range map[string]json.RawMessage{"invalid JSON": json.RawMessage(`{`), "too large": tooLarge()} {
		if _, err := s.RenewTask(ctx, "t", "r1", time.Minute, p); err == nil {
			t.Errorf("RenewTask with %s progress: no error, want one", name)
		}
	}

	// The runner sees the client's cancel on its next renewal.
	if _, err := s.CancelTask(ctx, "c", "t"); err != nil {
		t.Fatal(err)
	}
	seen, err := s.RenewTask(ctx, "t", "r1", time.Minute, json.RawMessage(`{"late":true}`))
	if err != nil || seen.Status != sessions.TaskCancelled || !bytes.Equal(seen.Progress, progress) {
		t.Errorf("RenewTask after a cancel = %s, progress %s, %v; want the cancelled task, progress unchanged", seen.Status, seen.Progress, err)
	}
	_, err = s.ClaimTask(ctx, "t", "r1", time.Minute)
	wantErr(t, "ClaimTask of a cancelled task", err, sessions.ErrTaskDone)
	_, err = s.CommitTask(ctx, "t", "r1")
	wantErr(t, "CommitTask of a cancelled task", err, sessions.ErrTaskDone)
}

func testTaskLeaseLapse(t *testing.T, h *harness) {
	a, b := h.taskPair(t)
	ctx := ctxT(t)
	mustCreateTask(t, a, newTask("t", "c"))
	// The runner "dies": a short lease it never renews.
	mustClaim(t, a, "t", "dead", 50*time.Millisecond)
	eventually(t, "the heir takes the lapsed lease over", func() bool {
		_, err := b.ClaimTask(ctx, "t", "heir", time.Minute)
		if err != nil && !errors.Is(err, sessions.ErrBusy) {
			t.Fatalf("ClaimTask by the heir error = %v, want nil or ErrBusy", err)
		}
		return err == nil
	})
	_, err := a.RenewTask(ctx, "t", "dead", time.Minute, nil)
	wantErr(t, "RenewTask by the taken-over runner", err, sessions.ErrLeaseLost)
	_, err = a.CommitTask(ctx, "t", "dead")
	wantErr(t, "CommitTask by the taken-over runner", err, sessions.ErrLeaseLost)
	_, err = a.FinishTask(ctx, "t", "dead", sessions.TaskCompleted, "", nil)
	wantErr(t, "FinishTask by the taken-over runner", err, sessions.ErrLeaseLost)
	_, err = a.ClaimTask(ctx, "t", "dead", time.Minute)
	wantErr(t, "ClaimTask back by the taken-over runner", err, sessions.ErrBusy)
	if got, err := b.CommitTask(ctx, "t", "heir"); err != nil || !got.Committing {
		t.Errorf("CommitTask by the heir = committing %v, %v; want it committing", got.Committing, err)
	}
	_, err = a.ClaimTask(ctx, "t", "third", time.Minute)
	wantErr(t, "ClaimTask of a committing task", err, sessions.ErrTaskDone)

	// A lapsed lease nobody took over is still the runner's to renew, but
	// not to commit on: it must renew first.
	mustCreateTask(t, a, newTask("u", "c"))
	mustClaim(t, a, "u", "slow", 20*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	_, err = a.CommitTask(ctx, "u", "slow")
	wantErr(t, "CommitTask on a lapsed lease", err, sessions.ErrLeaseLost)
	if _, err := a.RenewTask(ctx, "u", "slow", time.Minute, nil); err != nil {
		t.Errorf("RenewTask of a lapsed lease nobody took over error = %v, want nil", err)
	}
	if _, err := a.CommitTask(ctx, "u", "slow"); err != nil {
		t.Errorf("CommitTask after the renewal error = %v, want nil", err)
	}
}

func testTaskFinishRules(t *testing.T, h *harness) {
	s := h.tasks(t)
	ctx := ctxT(t)
	mustCreateTask(t, s, newTask("t", "c"))
	_, err := s.FinishTask(ctx, "t", "r", sessions.TaskCompleted, "", nil)
	wantErr(t, "FinishTask of an unclaimed task", err, sessions.ErrLeaseLost)
	mustClaim(t, s, "t", "r", time.Minute)
	for _, status := range []string{sessions.TaskWorking, "done", ""} {
		if _, err := s.FinishTask(ctx, "t", "r", status, "", nil); err == nil || errors.Is(err, sessions.ErrTaskDone) {
			t.Errorf("FinishTask with status %q error = %v, want a refusal of the status", status, err)
		}
	}
	_, err = s.FinishTask(ctx, "t", "other", sessions.TaskCompleted, "", nil)
	wantErr(t, "FinishTask by another runner", err, sessions.ErrLeaseLost)
	_, err = s.FinishTask(ctx, "nope", "r", sessions.TaskCompleted, "", nil)
	wantErr(t, "FinishTask of an unknown task", err, sessions.ErrNotFound)
	for name, call := range map[string]func() error{
		"NUL message": func() error {
			_, err := s.FinishTask(ctx, "t", "r", sessions.TaskFailed, nul, nil)
			return err
		},
		"long message": func() error {
			_, err := s.FinishTask(ctx, "t", "r", sessions.TaskFailed, strings.Repeat("m", sessions.MaxTaskMessage+1), nil)
			return err
		},
		"large result": func() error {
			_, err := s.FinishTask(ctx, "t", "r", sessions.TaskCompleted, "", tooLarge())
			return err
		},
	} {
		if err := call(); err == nil {
			t.Errorf("FinishTask with a %s: no error, want one", name)
		}
	}
	if got := mustGetTask(t, s, "c", "t"); got.Status != sessions.TaskWorking {
		t.Fatalf("after refused finishes the task is %s, want working", got.Status)
	}

	if _, err := s.CommitTask(ctx, "t", "r"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.CommitTask(ctx, "t", "r"); err != nil || !got.Committing {
		t.Errorf("CommitTask again by the same runner = committing %v, %v; want a no-op success", got.Committing, err)
	}
	got, err := s.CancelTask(ctx, "c", "t")
	wantErr(t, "CancelTask of a committing task", err, sessions.ErrTaskDone)
	if got.Status != sessions.TaskWorking || !got.Committing {
		t.Errorf("the refused cancel returned %s (committing %v), want the committing task", got.Status, got.Committing)
	}
	_, err = s.FinishTask(ctx, "t", "r", sessions.TaskCancelled, "", nil)
	wantErr(t, "FinishTask cancelled after the commit", err, sessions.ErrTaskDone)

	result := json.RawMessage(`{"content": [{"type": "text", "text": "done"}],  "isError": false}`)
	done, err := s.FinishTask(ctx, "t", "r", sessions.TaskCompleted, "all done", result)
	noErr(t, err, "FinishTask")
	if done.Status != sessions.TaskCompleted || done.StatusMessage != "all done" || !bytes.Equal(done.Result, result) {
		t.Errorf("finished task = %s %q %s, want completed \"all done\" %s", done.Status, done.StatusMessage, done.Result, result)
	}
	if diff := cmp.Diff(done, mustGetTask(t, s, "c", "t"), cmpOpts...); diff != "" {
		t.Errorf("GetTask after FinishTask (-finished +read):\n%s", diff)
	}
	again, err := s.FinishTask(ctx, "t", "r", sessions.TaskFailed, "again", nil)
	wantErr(t, "FinishTask of a finished task", err, sessions.ErrTaskDone)
	if again.Status != sessions.TaskCompleted {
		t.Errorf("the refused finish returned %s, want the completed task", again.Status)
	}
	got, err = s.CancelTask(ctx, "c", "t")
	wantErr(t, "CancelTask of a completed task", err, sessions.ErrTaskDone)
	if got.Status != sessions.TaskCompleted {
		t.Errorf("the refused cancel returned %s, want the completed task", got.Status)
	}
	_, err = s.ClaimTask(ctx, "t", "r", time.Minute)
	wantErr(t, "ClaimTask of a completed task", err, sessions.ErrTaskDone)
	_, err = s.CommitTask(ctx, "t", "r")
	wantErr(t, "CommitTask of a completed task", err, sessions.ErrTaskDone)
	late, err := s.RenewTask(ctx, "t", "r", time.Minute, json.RawMessage(`{"late":1}`))
	if err != nil || late.Status != sessions.TaskCompleted || late.Progress != nil {
		t.Errorf("RenewTask of a completed task = %s, progress %s, %v; want the completed task, no progress", late.Status, late.Progress, err)
	}

	// A runner that did not commit may end its task cancelled or failed.
	mustCreateTask(t, s, newTask("u", "c"))
	mustClaim(t, s, "u", "r", time.Minute)
	if got, err := s.FinishTask(ctx, "u", "r", sessions.TaskCancelled, "stopped", nil); err != nil || got.Status != sessions.TaskCancelled {
		t.Errorf("FinishTask cancelled before a commit = %s, %v; want cancelled", got.Status, err)
	}
	mustCreateTask(t, s, newTask("v", "c"))
	mustClaim(t, s, "v", "r", time.Minute)
	failure := json.RawMessage(`{"code":-32603,"message":"model unavailable"}`)
	if got, err := s.FinishTask(ctx, "v", "r", sessions.TaskFailed, "model unavailable", failure); err != nil ||
		got.Status != sessions.TaskFailed || !bytes.Equal(got.Result, failure) {
		t.Errorf("FinishTask failed = %s %s, %v; want failed with its result", got.Status, got.Result, err)
	}
}

func testTaskFailAbandoned(t *testing.T, h *harness) {
	s := h.tasks(t)
	ctx := ctxT(t)
	const msg = "the task's runner stopped"
	res := json.RawMessage(`{"code": -32603, "message": "the task's runner stopped"}`)
	for _, id := range []string{"dead", "deadCommitted", "live", "never"} {
		mustCreateTask(t, s, newTask(id, "c"))
	}
	mustClaim(t, s, "dead", "r1", 30*time.Millisecond)
	mustClaim(t, s, "deadCommitted", "r2", time.Minute)
	if _, err := s.CommitTask(ctx, "deadCommitted", "r2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RenewTask(ctx, "deadCommitted", "r2", time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, "live", "r3", time.Minute)
	time.Sleep(100 * time.Millisecond) // both short leases lapse

	if _, err := s.FailAbandonedTasks(ctx, msg, res, 0); err == nil {
		t.Error("FailAbandonedTasks with unclaimed 0: no error, want one")
	}
	if _, err := s.FailAbandonedTasks(ctx, nul, res, time.Hour); !errors.Is(err, sessions.ErrInvalidText) {
		t.Errorf("FailAbandonedTasks with a NUL message error = %v, want ErrInvalidText", err)
	}
	n, err := s.FailAbandonedTasks(ctx, msg, res, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("FailAbandonedTasks = %d, %v; want the 1 lapsed lease of a task not committing", n, err)
	}
	if got := mustGetTask(t, s, "c", "dead"); got.Status != sessions.TaskFailed || got.StatusMessage != msg || !bytes.Equal(got.Result, res) {
		t.Errorf("task dead = %s %q %s, want failed with the message and result", got.Status, got.StatusMessage, got.Result)
	}
	// A committing task's reply may be stored: it is left to the sweep,
	// which finishes it from the reply (AbandonedCommits).
	if got := mustGetTask(t, s, "c", "deadCommitted"); got.Status != sessions.TaskWorking || !got.Committing {
		t.Errorf("task deadCommitted = %s (committing %v), want still working and committing", got.Status, got.Committing)
	}
	commits, err := s.AbandonedCommits(ctx, 10)
	if err != nil || len(commits) != 1 || commits[0].ID != "deadCommitted" || commits[0].Runner != "r2" || len(commits[0].Request) == 0 {
		t.Errorf("AbandonedCommits = %+v, %v; want task deadCommitted with its runner and request", commits, err)
	}
	if _, err := s.RenewTask(ctx, "deadCommitted", "r2", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if commits, err := s.AbandonedCommits(ctx, 10); err != nil || len(commits) != 0 {
		t.Errorf("AbandonedCommits with the lease live again = %+v, %v; want none", commits, err)
	}
	for _, id := range []string{"live", "never"} {
		if got := mustGetTask(t, s, "c", id); got.Status != sessions.TaskWorking {
			t.Errorf("task %s = %s, want still working", id, got.Status)
		}
	}
	// The dead runner, should it wake, sees the failure.
	if got, err := s.RenewTask(ctx, "dead", "r1", time.Minute, nil); err != nil || got.Status != sessions.TaskFailed {
		t.Errorf("RenewTask by the abandoned runner = %s, %v; want the failed task", got.Status, err)
	}
	if n, err := s.FailAbandonedTasks(ctx, msg, res, time.Hour); err != nil || n != 0 {
		t.Errorf("FailAbandonedTasks again = %d, %v; want 0", n, err)
	}
	// A task no runner claimed within unclaimed.
	time.Sleep(60 * time.Millisecond)
	if n, err := s.FailAbandonedTasks(ctx, msg, nil, 50*time.Millisecond); err != nil || n != 1 {
		t.Errorf("FailAbandonedTasks(unclaimed 50ms) = %d, %v; want the never claimed task", n, err)
	}
	if got := mustGetTask(t, s, "c", "never"); got.Status != sessions.TaskFailed || got.Result != nil {
		t.Errorf("never claimed task = %s, result %s; want failed without a result", got.Status, got.Result)
	}
	if got := mustGetTask(t, s, "c", "live"); got.Status != sessions.TaskWorking {
		t.Errorf("task live = %s, want still working", got.Status)
	}
}

func testTaskExpiry(t *testing.T, h *harness) {
	s := h.tasks(t)
	ctx := ctxT(t)
	short := func(id string) sessions.NewTask {
		in := newTask(id, "c")
		in.TTL = 200 * time.Millisecond
		return in
	}
	mustCreateTask(t, s, short("short"))
	mustCreateTask(t, s, short("shortWorking"))
	mustCreateTask(t, s, newTask("long", "c"))
	for _, id := range []string{"short", "long"} {
		mustClaim(t, s, id, "r", time.Minute)
		if _, err := s.FinishTask(ctx, id, "r", sessions.TaskCompleted, "", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the short task expires", func() bool {
		_, err := s.GetTask(ctx, "c", "short")
		if err != nil && !errors.Is(err, sessions.ErrNotFound) {
			t.Fatalf("GetTask error: %v", err)
		}
		return err != nil
	})
	if ids := listIDs(t, s, "c"); !cmp.Equal(ids, []string{"shortWorking", "long"}) {
		t.Errorf("ListTasks after the expiry = %v, want [shortWorking long]", ids)
	}
	_, err := s.CancelTask(ctx, "c", "short")
	wantErr(t, "CancelTask of an expired task", err, sessions.ErrNotFound)
	_, err = s.ClaimTask(ctx, "short", "r", time.Minute)
	wantErr(t, "ClaimTask of an expired task", err, sessions.ErrNotFound)
	// A working task never expires.
	mustGetTask(t, s, "c", "shortWorking")
	if n, err := s.PurgeExpiredTasks(ctx); err != nil || n != 1 {
		t.Errorf("PurgeExpiredTasks = %d, %v; want 1", n, err)
	}
	if n, err := s.PurgeExpiredTasks(ctx); err != nil || n != 0 {
		t.Errorf("PurgeExpiredTasks again = %d, %v; want 0", n, err)
	}
	mustGetTask(t, s, "c", "long")
	// Once it ends, it expires at once: its ttl ran from its creation.
	mustClaim(t, s, "shortWorking", "r", time.Minute)
	if _, err := s.FinishTask(ctx, "shortWorking", "r", sessions.TaskCompleted, "", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the finished short task expires", func() bool {
		_, err := s.GetTask(ctx, "c", "shortWorking")
		return errors.Is(err, sessions.ErrNotFound)
	})
	if n, err := s.PurgeExpiredTasks(ctx); err != nil || n != 1 {
		t.Errorf("PurgeExpiredTasks after the last finish = %d, %v; want 1", n, err)
	}
}

// tooLarge is a valid JSON document one byte over MaxTaskPayload.
func tooLarge() json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("a", sessions.MaxTaskPayload-1) + `"`)
}

func testTaskTextAndSize(t *testing.T, h *harness) {
	s := h.tasks(t)
	ctx := ctxT(t)
	for name, in := range map[string]sessions.NewTask{
		"id":      {ID: nul, ClientID: "c", Request: taskRequest, TTL: time.Hour},
		"client":  {ID: "t1", ClientID: nul, Request: taskRequest, TTL: time.Hour},
		"request": {ID: "t2", ClientID: "c", Request: json.RawMessage("\"a\x00b\""), TTL: time.Hour},
	} {
		_, err := s.CreateTask(ctx, in)
		wantInvalidText(t, "CreateTask "+name, err)
	}
	mustCreateTask(t, s, newTask("t", "c"))
	_, err := s.ClaimTask(ctx, "t", nul, time.Minute)
	wantInvalidText(t, "ClaimTask runner", err)
	mustClaim(t, s, "t", "r", time.Minute)
	_, err = s.RenewTask(ctx, "t", "r", time.Minute, json.RawMessage("\"\x00\""))
	wantInvalidText(t, "RenewTask progress", err)
	_, err = s.FinishTask(ctx, "t", "r", sessions.TaskCompleted, "", json.RawMessage("\"\x00\""))
	wantInvalidText(t, "FinishTask result", err)
	wantTaskNotFound(t, s, "c", nul)
	if _, err := s.CancelTask(ctx, nul, "t"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("CancelTask by a NUL client error = %v, want ErrNotFound", err)
	}
	if page, err := s.ListTasks(ctx, nul, "", 10); err != nil || len(page.Tasks) != 0 {
		t.Errorf("ListTasks of a NUL client = %d tasks, %v; want none", len(page.Tasks), err)
	}

	// An escaped U+0000 is plain JSON text: stored byte for byte.
	escaped := json.RawMessage(`{"text": "a\u0000b"}`)
	in := newTask("escaped", "c")
	in.Request = escaped
	mustCreateTask(t, s, in)
	if got := mustGetTask(t, s, "c", "escaped"); !bytes.Equal(got.Request, escaped) {
		t.Errorf("Request with an escaped U+0000 = %s, want %s", got.Request, escaped)
	}

	// Sizes: the maximum is stored, one byte more is refused.
	big := newTask("big", "c")
	big.Request = tooLarge()
	_, err = s.CreateTask(ctx, big)
	wantErr(t, "CreateTask over MaxTaskPayload", err, sessions.ErrTaskTooLarge)
	wantTaskNotFound(t, s, "c", "big")
	big.Request = big.Request[1:]
	big.Request[0] = '"'
	mustCreateTask(t, s, big)
	if got := mustGetTask(t, s, "c", "big"); len(got.Request) != sessions.MaxTaskPayload {
		t.Errorf("stored Request of MaxTaskPayload bytes reads back as %d bytes", len(got.Request))
	}
	_, err = s.RenewTask(ctx, "t", "r", time.Minute, tooLarge())
	wantErr(t, "RenewTask over MaxTaskPayload", err, sessions.ErrTaskTooLarge)
	if got := mustGetTask(t, s, "c", "t"); got.Progress != nil || got.Status != sessions.TaskWorking {
		t.Errorf("after refused writes task t = %s, progress %s; want working without progress", got.Status, got.Progress)
	}
}

// CheckUpgradedTasks checks that st, a store upgraded to the tasks schema
// from an older one, keeps tasks: a task's whole life, create to purge.
func CheckUpgradedTasks(t *testing.T, st sessions.Store) {
	t.Helper()
	s := tasksOf(t, st)
	ctx := t.Context()
	in := newTask("t", "c")
	in.MaxWorking = 1
	mustCreateTask(t, s, in)
	in.ID = "u"
	_, err := s.CreateTask(ctx, in)
	wantErr(t, "CreateTask over the cap after the upgrade", err, sessions.ErrTaskLimit)
	mustClaim(t, s, "t", "r", time.Minute)
	if _, err := s.CommitTask(ctx, "t", "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FinishTask(ctx, "t", "r", sessions.TaskCompleted, "", json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	if got := mustGetTask(t, s, "c", "t"); got.Status != sessions.TaskCompleted || string(got.Result) != `{"ok":true}` {
		t.Errorf("task after the upgrade = %s %s, want completed with its result", got.Status, got.Result)
	}
	if ids := listIDs(t, s, "c"); !cmp.Equal(ids, []string{"t"}) {
		t.Errorf("ListTasks after the upgrade = %v, want [t]", ids)
	}
	if n, err := s.PurgeExpiredTasks(ctx); err != nil || n != 0 {
		t.Errorf("PurgeExpiredTasks after the upgrade = %d, %v; want 0", n, err)
	}
}
