//go:build linux

package perf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
)

// taskTurns is how many model turns the task benchmarks' script holds; the
// scripted model replays them in order, one per turn.
const taskTurns = 5_000

// tasksState is a fresh state directory whose config turns durable MCP
// tasks on, with a scripted model whose every turn answers at once, on
// storeURL ("": SQLite in the state directory).
func tasksState(b *testing.B, storeURL string) *state {
	b.Helper()
	var sb strings.Builder
	sb.WriteString(`{"turns": [`)
	for i := range taskTurns {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"text": "done"}`)
	}
	sb.WriteString(`]}`)
	st := newState(b, filepath.Join(b.TempDir(), "state"), sb.String())
	conf := map[string]any{
		"model":      map[string]any{"provider": "scripted", "script": filepath.Join(st.dir, "script.json")},
		"mcp_server": map[string]any{"tasks": map[string]any{"enabled": true}},
	}
	if storeURL != "" {
		conf["store"] = map[string]any{"url": storeURL}
	}
	cfg, err := json.Marshal(conf)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(st.dir, "config.json"), cfg, 0o600); err != nil {
		b.Fatalf("write config.json: %v", err)
	}
	return st
}

// taskOf returns the task id and status of a CreateTaskResult or a
// tasks/get result.
func taskOf(b *testing.B, m message) (id, status string) {
	b.Helper()
	if m.Error != nil {
		b.Fatalf("task request failed: %+v", m.Error)
	}
	var r struct {
		Task   *struct{ TaskID, Status string }
		TaskID string
		Status string
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		b.Fatalf("decode %s: %v", m.Result, err)
	}
	if r.Task != nil {
		return r.Task.TaskID, r.Task.Status
	}
	return r.TaskID, r.Status
}

// BenchmarkTaskTurn measures what a durable task adds to a turn, whole
// process (see the package documentation): plain is a prompt_send answered
// in the connection; task is the same prompt_send as a task, from the
// tools/call to the tasks/result answer (the runner process started for
// the task, its host opened, the turn run and stored); created is the
// tools/call to its CreateTaskResult; get is one tasks/get round trip on a
// finished task; task-after-pause is task with a pause before each task
// (what a client that reads a result before it sends the next prompt
// sees), and plain-after-pause is plain with the same pause, its
// comparator. Each runs on SQLite and on PostgreSQL (a schema of its own
// under OPENPROGRAM_TEST_DATABASE_URL; skipped without one).
func BenchmarkTaskTurn(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchTaskTurn(b, "") })
	b.Run("postgres", func(b *testing.B) { benchTaskTurn(b, pgtest.URL(b, "op_perf")) })
}

func benchTaskTurn(b *testing.B, storeURL string) {
	bin := binary(b)
	st := tasksState(b, storeURL)
	p, _ := startRaw(b, bin, st, initializeLine)
	defer runnersGone(b, st.dir)
	defer p.close(b)
	p.initialize(b)
	id := 100
	call := func(task bool) (message, time.Time, time.Time) {
		id++
		extra := ""
		if task {
			extra = `,"task":{"ttl":600000}`
		}
		line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"go"}%s}}`+"\n", id, extra)
		start := time.Now()
		p.send(b, line)
		m, at := p.response(b, strconv.Itoa(id))
		return m, start, at
	}
	request := func(method, params string) (message, time.Duration) {
		id++
		line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
		start := time.Now()
		p.send(b, line)
		m, at := p.response(b, strconv.Itoa(id))
		return m, at.Sub(start)
	}

	var last string
	// plain sends each prompt_send as soon as the previous answer is read;
	// plain-after-pause waits taskPause first (not timed), as
	// task-after-pause does, so that the two compare like with like: a
	// pause lets caches, connections and CPU frequency go cold for both.
	plain := func(pause time.Duration) func(b *testing.B) {
		return func(b *testing.B) {
			var s samples
			for b.Loop() {
				pauseUntimed(b, pause)
				m, start, at := call(false)
				if m.Error != nil {
					b.Fatalf("prompt_send: %+v", m.Error)
				}
				s = append(s, at.Sub(start))
			}
			reportLatency(b, s, true)
		}
	}
	// task sends each task as soon as the previous result is read;
	// task-after-pause waits taskPause first, as a client that reads a
	// result before it sends the next prompt does (the pause is not timed).
	task := func(pause time.Duration) func(b *testing.B) {
		return func(b *testing.B) { benchTasks(b, pause, call, request, &last, st) }
	}
	b.Run("plain", plain(0))
	b.Run("plain-after-pause", plain(taskPause))
	b.Run("task", task(0))
	b.Run("task-after-pause", task(taskPause))
	b.Run("get", func(b *testing.B) {
		if last == "" {
			b.Skip("no task ran (run it with the task sub-benchmark)")
		}
		params := fmt.Sprintf(`{"taskId":%q}`, last)
		var s samples
		for b.Loop() {
			m, d := request("tasks/get", params)
			if _, status := taskOf(b, m); status != "completed" {
				b.Fatalf("task %s is %q, want completed", last, status)
			}
			s = append(s, d)
		}
		reportLatency(b, s, true)
	})
}

// taskPause is the pause before each call of BenchmarkTaskTurn's
// plain-after-pause and task-after-pause.
const taskPause = 100 * time.Millisecond

// pauseUntimed sleeps pause (if any) with b's timer stopped.
func pauseUntimed(b *testing.B, pause time.Duration) {
	if pause > 0 {
		b.StopTimer()
		time.Sleep(pause)
		b.StartTimer()
	}
}

// benchTasks times tasks to their result, each after pause.
func benchTasks(b *testing.B, pause time.Duration, call func(bool) (message, time.Time, time.Time), request func(method, params string) (message, time.Duration), last *string, st *state) {
	var whole, created samples
	for b.Loop() {
		pauseUntimed(b, pause)
		m, start, at := call(true)
		taskID, status := taskOf(b, m)
		if status != "working" {
			b.Fatalf("new task %s is %q, want working", taskID, status)
		}
		created = append(created, at.Sub(start))
		r, _ := request("tasks/result", fmt.Sprintf(`{"taskId":%q}`, taskID))
		if r.Error != nil {
			b.Fatalf("tasks/result %s: %+v (server log: %s)", taskID, r.Error, st.logTail())
		}
		whole = append(whole, time.Since(start))
		*last = taskID
	}
	reportLatency(b, whole, true)
	b.ReportMetric(ms(created.quantile(0.5)), "created-p50-ms")
}

// runnersGone waits until no task runner of the state directory dir lives
// (the standby exits once its server has): the state directory is removed
// after the benchmark, and a runner closing its store would race that.
func runnersGone(b *testing.B, dir string) {
	b.Helper()
	want := []byte("OPENPROGRAM_HOME=" + dir + "\x00")
	deadline := time.Now().Add(time.Minute)
	for {
		live := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && bytes.Contains(environ, want) && bytes.Contains(cmdline, []byte("run-task")) {
				live++
			}
		}
		if live == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d task runners of %s still live a minute after their server exited", live, dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
