//go:build unix

package tasks

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/mcpserver"
)

// longTurn is the turn the issue asks the tests to outlive a client with.
const longTurn = 90 * time.Second

// A 90 s turn started with callToolStream outlives the client that started
// it, closed the SDK's way (stdin, SIGTERM, SIGKILL): a new client process,
// with a new server process, gets the reply with getTaskResult.
func TestTaskOutlivesTheClient(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, testTaskOutlivesTheClient)
}

func testTaskOutlivesTheClient(t *testing.T, backend string) {
	in := newInstall(t, backend, longTurn)
	began := time.Now()
	s := in.startTask("do the long work")
	if s.Created.Status != "working" || s.Created.TTL == nil || *s.Created.TTL != time.Hour.Milliseconds() ||
		s.Created.PollInterval == nil || s.Created.CreatedAt == "" || s.Created.LastUpdatedAt == "" {
		t.Errorf("the created task = %+v, want working with ttl 1h, a pollInterval and both times", s.Created)
	}
	if s.Status.Status != "working" {
		t.Errorf("the first tasks/get = %+v, want working", s.Status)
	}
	if got := string(s.ToolExecution); got != `{"taskSupport":"optional"}` {
		t.Errorf("prompt_send's execution in tools/list = %s, want {\"taskSupport\":\"optional\"}", got)
	}
	id := s.Created.TaskID
	// The server that created the task is gone (the step's client closed
	// it); its runner is not.
	if pids := in.runners(id); len(pids) != 1 {
		t.Fatalf("runner processes of task %s = %v, want one", id, pids)
	}

	o := in.step(in.Token, "result", id)
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool                       `json:"isError"`
		Meta    map[string]json.RawMessage `json:"_meta"`
	}
	o.ok(t, &res)
	if took := time.Since(began); took < longTurn {
		t.Errorf("the result came %s after the start, before the %s turn could end", took, longTurn)
	}
	if res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, slowAnswer) {
		t.Errorf("tasks/result = %+v, want prompt_send's result with %q", res, slowAnswer)
	}
	if got := string(res.Meta["io.modelcontextprotocol/related-task"]); got != `{"taskId":"`+id+`"}` {
		t.Errorf("tasks/result _meta related-task = %s, want {\"taskId\":%q}", got, id)
	}
	var got task
	in.step(in.Token, "get", id).ok(t, &got)
	if got.Status != "completed" {
		t.Errorf("tasks/get after the result = %+v, want completed", got)
	}
	e2etest.Eventually(t, "the runner to exit once its task completed", time.Minute, func() bool { return len(in.runners(id)) == 0 })
}

// tasks/cancel mid-turn cancels the task before it answers, stops the
// runner's turn, and the turn writes nothing to the session.
func TestTaskCancelMidTurn(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, testTaskCancelMidTurn)
}

func testTaskCancelMidTurn(t *testing.T, backend string) {
	in := newInstall(t, backend, longTurn)
	id := in.startTask("work that will be cancelled").Created.TaskID
	// A new connection (each step is a new client and server process) sees
	// the turn's progress as the task's statusMessage.
	e2etest.Eventually(t, "tasks/get of a later connection to show the turn's progress", time.Minute, func() bool {
		var g task
		in.step(in.Token, "get", id).ok(t, &g)
		return g.Status == "working" && g.StatusMessage == "turn started"
	})
	var c task
	in.step(in.Token, "cancel", id).ok(t, &c)
	if c.TaskID != id || c.Status != "cancelled" {
		t.Errorf("tasks/cancel = %+v, want task %s cancelled", c, id)
	}
	// The runner sees the cancel at its next lease renewal and ends the
	// turn: it exits long before the model would have answered.
	e2etest.Eventually(t, "the runner to exit after tasks/cancel", time.Minute, func() bool { return len(in.runners(id)) == 0 })
	var got task
	in.step(in.Token, "get", id).ok(t, &got)
	if got.Status != "cancelled" {
		t.Errorf("tasks/get after the cancel = %+v, want cancelled", got)
	}
	// A second cancel: the task is terminal.
	in.step(in.Token, "cancel", id).rpcError(t, -32602)
	// Nothing of the turn was written: no session holds an assistant reply.
	for _, line := range strings.Split(strings.TrimSpace(in.MustRun("sessions", "list", "--json")), "\n") {
		if line == "" {
			continue
		}
		var s struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("sessions list --json line %q: %v", line, err)
		}
		if show := in.MustRun("sessions", "show", "--json", s.ID); strings.Contains(show, `"assistant"`) || strings.Contains(show, slowAnswer) {
			t.Errorf("the cancelled task's session %s holds a reply:\n%s", s.ID, show)
		}
	}
}

// Another token's client can neither see the task (tasks/list, tasks/get)
// nor cancel it. The client that started it sent its server SIGTERM before
// it closed: the runner lives on.
func TestTaskIsolation(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, testTaskIsolation)
}

func testTaskIsolation(t *testing.T, backend string) {
	in := newInstall(t, backend, longTurn)
	id := in.startTask("work of the first client", "TASKS_START_SIGTERM=1").Created.TaskID
	var mine struct {
		Tasks []task `json:"tasks"`
	}
	in.step(in.Token, "list", "").ok(t, &mine)
	if !slices.ContainsFunc(mine.Tasks, func(x task) bool { return x.TaskID == id }) {
		t.Fatalf("the owner's tasks/list = %+v, want task %s", mine.Tasks, id)
	}

	other := strings.TrimSpace(in.MustRun("mcp", "token", "rotate", "--yes"))
	if other == in.Token {
		t.Fatal("the rotated token is the old one")
	}
	var theirs struct {
		Tasks []task `json:"tasks"`
	}
	in.step(other, "list", "").ok(t, &theirs)
	if len(theirs.Tasks) != 0 {
		t.Errorf("another client's tasks/list = %+v, want none", theirs.Tasks)
	}
	in.step(other, "get", id).rpcError(t, -32602)
	in.step(other, "cancel", id).rpcError(t, -32602)
	// The cancel changed nothing: the runner still runs the turn.
	if pids := in.runners(id); len(pids) != 1 {
		t.Errorf("runner processes of task %s after another client's cancel = %v, want one", id, pids)
	}
}

// A runner killed with SIGKILL leaves its task working with a lease that
// lapses; the sweep of the next `mcp serve` fails it with the fixed message.
func TestTaskOfAKilledRunnerFails(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, testTaskOfAKilledRunnerFails)
}

func testTaskOfAKilledRunnerFails(t *testing.T, backend string) {
	in := newInstall(t, backend, longTurn)
	id := in.startTask("work whose runner dies").Created.TaskID
	pids := in.runners(id)
	if len(pids) != 1 {
		t.Fatalf("runner processes of task %s = %v, want one", id, pids)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatalf("kill the runner: %v", err)
	}
	e2etest.Eventually(t, "the killed runner to be gone", time.Minute, func() bool { return len(in.runners(id)) == 0 })
	got := in.swept(id)
	if got.Status != "failed" || got.StatusMessage != mcpserver.TaskAbandonedMessage {
		t.Errorf("the task of the killed runner = %+v, want failed with %q", got, mcpserver.TaskAbandonedMessage)
	}
}

// A client that sends no task gets prompt_send's plain result, and no task
// is made.
func TestPlainPromptSendMakesNoTask(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, testPlainPromptSendMakesNoTask)
}

func testPlainPromptSendMakesNoTask(t *testing.T, backend string) {
	in := newInstall(t, backend, 0)
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
		Task    any  `json:"task"`
	}
	in.step(in.Token, "call", "a quick question").ok(t, &res)
	if res.IsError || res.Task != nil || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, slowAnswer) {
		t.Errorf("plain prompt_send = %+v, want its result with %q and no task", res, slowAnswer)
	}
	var list struct {
		Tasks []task `json:"tasks"`
	}
	in.step(in.Token, "list", "").ok(t, &list)
	if len(list.Tasks) != 0 {
		t.Errorf("tasks/list after a plain prompt_send = %+v, want none", list.Tasks)
	}
	if len(in.runnersOfInstall()) != 0 {
		t.Error("a plain prompt_send started a task runner")
	}
}
