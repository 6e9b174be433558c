//go:build unix

package tasks

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
)

// handedTo is the pid of the runner the task log says task id was handed
// to, 0 when none.
func (in *install) handedTo(id string) int {
	for line := range strings.SplitSeq(in.taskLog(), "\n") {
		if m := runnerLine.FindStringSubmatch(line); m != nil && m[1] == "started" && m[2] == id {
			pid, _ := strconv.Atoi(m[3])
			return pid
		}
	}
	return 0
}

// result waits for tasks/result of id on c and fails unless it is a result.
func (c *serveConn) result(id string) {
	c.t.Helper()
	f := c.read(c.send("tasks/result", map[string]any{"taskId": id}))
	if _, ok := f.Members["result"]; !ok {
		c.t.Fatalf("tasks/result of %s: %s", id, f.Members["error"])
	}
}

// taskStatus is the status tasks/get answers for id on c.
func (c *serveConn) taskStatus(id string) string {
	c.t.Helper()
	f := c.read(c.send("tasks/get", map[string]any{"taskId": id}))
	var got task
	if err := json.Unmarshal(f.Members["result"], &got); err != nil {
		c.t.Fatalf("tasks/get of %s: %s", id, f.Members["error"])
	}
	return got.Status
}

// A task is handed to the runner the serve keeps warm: the runner of the
// second task is the process that ran the first and then waited, started
// before the second was asked for.
func TestTaskIsHandedToTheStandby(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, func(t *testing.T, backend string) {
		in := newInstall(t, backend, 0)
		c := in.serve(t)
		first := c.createTask("the first task")
		c.result(first)
		var standby int
		e2etest.Eventually(t, "the first task's runner to wait as the standby", time.Minute, func() bool {
			pids := in.runnersOfInstall()
			if len(pids) != 1 || in.holdsSlot(pids[0]) {
				return false
			}
			standby = pids[0]
			return true
		})
		if got := in.handedTo(first); got != standby {
			t.Fatalf("the standby is %d, the first task's runner %d", standby, got)
		}
		second := c.createTask("the second task")
		c.result(second)
		if got := in.handedTo(second); got != standby {
			t.Errorf("the second task ran in process %d, want the standby %d started before it was asked for; task log:\n%s", got, standby, in.taskLog())
		}
	})
}

// A standby exits when its serve goes away (stdin closed); the runner of
// a task goes on and exits once its task ended.
func TestStandbyExitsWithItsServer(t *testing.T) {
	t.Parallel()
	in := newInstall(t, e2etest.SQLite, longTurn)
	c := in.serve(t)
	id := c.createTask("a long task")
	in.waitAsked(id)
	// Beside a turn that lasts, the serve starts a standby for the next task.
	var standby int
	e2etest.Eventually(t, "a standby beside the running task", time.Minute, func() bool {
		running := in.runners(id)
		for _, pid := range in.runnersOfInstall() {
			if !slices.Contains(running, pid) && len(running) == 1 {
				standby = pid
				return true
			}
		}
		return false
	})
	runner := in.runners(id)[0]
	c.close()
	e2etest.Eventually(t, "the standby to exit with its serve", time.Minute, func() bool {
		return !slices.Contains(in.runnersOfInstall(), standby)
	})
	if !slices.Contains(in.runnersOfInstall(), runner) {
		t.Fatalf("the task's runner %d exited with the serve", runner)
	}
	in.answer()
	e2etest.Eventually(t, "the task's runner to exit once its task ended", time.Minute, func() bool { return len(in.runnersOfInstall()) == 0 })
	var got task
	in.step(in.Token, "get", id).ok(t, &got)
	if got.Status != "completed" {
		t.Errorf("the task after its serve went away = %+v, want completed", got)
	}
}

// A task cancelled while its creation waits for a runner slot is handed
// to a runner that finds it cancelled: no turn runs (the model is asked
// only for the task that held the slot).
func TestTaskCancelledBeforeItsHandoffRunsNoTurn(t *testing.T) {
	t.Parallel()
	in := newInstall(t, e2etest.SQLite, longTurn)
	in.MustRun("config", "set", "mcp_server.tasks.max_runners", "1")
	c := in.serve(t)
	holder := c.createTask("the task that holds the only slot")
	in.waitAsked(holder)
	// Its creation waits for the slot (up to 10 s): the task exists.
	waiting := c.send("tools/call", map[string]any{"name": "prompt_send", "arguments": map[string]any{"prompt": "cancelled before its handoff"}, "task": map[string]any{}})
	var id string
	e2etest.Eventually(t, "the waiting task to be listed", time.Minute, func() bool {
		f := c.read(c.send("tasks/list", map[string]any{}))
		var l struct {
			Tasks []task `json:"tasks"`
		}
		_ = json.Unmarshal(f.Members["result"], &l)
		for _, x := range l.Tasks {
			if x.TaskID != holder {
				id = x.TaskID
			}
		}
		return id != ""
	})
	var cancelled task
	if err := json.Unmarshal(c.read(c.send("tasks/cancel", map[string]any{"taskId": id})).Members["result"], &cancelled); err != nil || cancelled.Status != "cancelled" {
		t.Fatalf("tasks/cancel of the waiting task = %+v, %v", cancelled, err)
	}
	in.answer()
	c.read(waiting)
	c.result(holder)
	e2etest.Eventually(t, "the cancelled task's runner to find it cancelled", time.Minute, func() bool {
		return strings.Contains(in.taskLog(), "task_id="+id) && runnerDone(in.taskLog(), id)
	})
	if got := c.taskStatus(id); got != "cancelled" {
		t.Errorf("the task cancelled before its handoff is %s, want cancelled", got)
	}
	if n := len(in.fake.Exchanges()); n != 1 {
		t.Errorf("the model was asked %d times, want once (only for the task that held the slot)", n)
	}
}

// runnerDone reports whether the task log says the runner of task id is
// done with it (done or failed).
func runnerDone(log, id string) bool {
	for line := range strings.SplitSeq(log, "\n") {
		if m := runnerLine.FindStringSubmatch(line); m != nil && m[2] == id && m[1] != "started" {
			return true
		}
	}
	return false
}

// Standbys are bounded per state directory, not only per serve: with
// mcp_server.tasks.max_runners 1, three serves that each ran a task keep
// one standby among them, not one each (a team's hundreds of serves would
// otherwise keep hundreds of idle runners, each with its host open).
func TestStandbysAreBoundedPerHost(t *testing.T) {
	t.Parallel()
	in := newInstall(t, e2etest.SQLite, 0)
	in.MustRun("config", "set", "mcp_server.tasks.max_runners", "1")
	var conns []*serveConn
	for i := range 3 {
		c := in.serve(t)
		conns = append(conns, c)
		c.result(c.createTask("task " + strconv.Itoa(i)))
	}
	e2etest.Eventually(t, "one standby for the three serves", time.Minute, func() bool {
		return len(in.runnersOfInstall()) == 1
	})
	// The one standby still takes the next task of whichever serve kept it.
	for _, c := range conns {
		c.result(c.createTask("one more"))
	}
	e2etest.Eventually(t, "still one standby", time.Minute, func() bool {
		return len(in.runnersOfInstall()) == 1
	})
}
