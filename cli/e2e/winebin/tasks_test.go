package winebin

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rawServe is `mcp serve` of openprogram.exe under Wine over raw pipes,
// initialized (the Go SDK's client has no tasks/* methods).
type rawServe struct {
	t      *testing.T
	stdin  io.WriteCloser
	sc     *bufio.Scanner
	stderr *os.File
	wait   func() error
	next   int
}

// serveRaw starts `mcp serve` with token and initializes it.
func (u *windowsUser) serveRaw(ctx context.Context, t *testing.T, token string) *rawServe {
	t.Helper()
	cmd := u.command(ctx, []string{"OPENPROGRAM_MCP_TOKEN=" + token}, "mcp", "serve")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// stderr is a file, so that waiting for the server waits for its
	// process, not for every process that may hold its stderr.
	stderr, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stderr.Close() })
	c := &rawServe{t: t, stdin: stdin, stderr: stderr, wait: cmd.Wait}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c.sc = bufio.NewScanner(stdout)
	c.sc.Buffer(make([]byte, 1<<20), 1<<20)
	c.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "wine-tasks", "version": "1"}})
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// call sends a request and returns its result, failing the test on an
// error answer or the end of stdout.
func (c *rawServe) call(method string, params any) json.RawMessage {
	c.t.Helper()
	c.next++
	id := strconv.Itoa(c.next)
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		c.t.Fatalf("write %s: %v\nstderr:\n%s", method, err, c.stderrText())
	}
	for c.sc.Scan() {
		var f struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(c.sc.Bytes(), &f); err != nil {
			c.t.Fatalf("stdout line %q: %v", c.sc.Bytes(), err)
		}
		if string(f.ID) != id {
			continue // a notification, or another response
		}
		if f.Error != nil {
			c.t.Fatalf("%s: error %s\nstderr:\n%s", method, f.Error, c.stderrText())
		}
		return f.Result
	}
	c.t.Fatalf("stdout ended before the answer to %s: %v\nstderr:\n%s", method, c.sc.Err(), c.stderrText())
	return nil
}

// stderrText is what the server wrote to stderr so far.
func (c *rawServe) stderrText() string {
	data, _ := os.ReadFile(c.stderr.Name())
	return string(data)
}

// close ends the server's stdin, as a client that goes away does, and
// waits for it to exit.
func (c *rawServe) close() {
	c.t.Helper()
	_ = c.stdin.Close()
	if err := c.wait(); err != nil {
		c.t.Errorf("mcp serve after its stdin ended: %v\nstderr:\n%s", err, c.stderrText())
	}
}

// TestWindowsTaskOutlivesItsClient: openprogram.exe under Wine offers
// durable tasks by default. A task-mode prompt_send with the scripted
// model (a turn of several seconds) is answered created at once; its
// client goes away (the server's stdin ends); a new `mcp serve` of the
// same client answers tasks/result with the task's reply, and tasks/get
// says completed: the detached runner ran the turn after its serve exited.
func TestWindowsTaskOutlivesItsClient(t *testing.T) {
	wine := wineExec(t)
	exe := buildExe(t.Context(), t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	u := newWindowsUser(t, wine, exe)
	token := strings.TrimSpace(u.run(nil, 0, "mcp", "token", "create"))
	const reply = "the task's reply from Windows, after its client left"
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":"`+reply+`","delay_ms":750}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	u.run(nil, 0, "config", "set", "model.provider", "scripted")
	u.run(nil, 0, "config", "set", "model.script", winPath(script))

	first := u.serveRaw(ctx, t, token)
	var tools struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(first.call("tools/list", map[string]any{}), &tools); err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "prompt_send" && (tl.Execution == nil || tl.Execution.TaskSupport != "optional") {
			t.Fatalf("prompt_send's execution = %+v, want taskSupport optional (tasks on by default on Windows)", tl.Execution)
		}
	}
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"task"`
	}
	raw := first.call("tools/call", map[string]any{"name": "prompt_send", "arguments": map[string]any{"prompt": "take your time"}, "task": map[string]any{}})
	if err := json.Unmarshal(raw, &created); err != nil || created.Task.TaskID == "" || created.Task.Status != "working" {
		t.Fatalf("tools/call with a task = %s, want a working task\nstderr:\n%s", raw, first.stderrText())
	}
	start := time.Now()
	first.close()
	t.Logf("the first server exited %s after its stdin ended", time.Since(start).Round(time.Millisecond))
	if strings.Contains(first.stderrText(), "break away") {
		t.Log("the runner could not break away from the client's job here: it started in it")
	}

	second := u.serveRaw(ctx, t, token)
	var then struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(second.call("tasks/get", map[string]any{"taskId": created.Task.TaskID}), &then); err != nil {
		t.Fatalf("tasks/get as the second server starts: %v", err)
	}
	t.Logf("the task as the second server starts: %s", then.Status) // working: its turn outlived its client
	if then.Status != "working" && then.Status != "completed" {
		t.Fatalf("the task as the second server starts is %q, want working (or completed): its client's exit ended it", then.Status)
	}
	var result struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	raw = second.call("tasks/result", map[string]any{"taskId": created.Task.TaskID})
	if err := json.Unmarshal(raw, &result); err != nil || result.IsError || len(result.Content) == 0 || !strings.Contains(result.Content[0].Text, reply) {
		log, _ := os.ReadFile(filepath.Join(u.profile, ".openprogram", "mcp-tasks.log"))
		t.Fatalf("tasks/result = %s, want the scripted reply\ntask log:\n%s", raw, log)
	}
	var got struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(second.call("tasks/get", map[string]any{"taskId": created.Task.TaskID}), &got); err != nil || got.Status != "completed" {
		t.Errorf("tasks/get = %+v, %v; want completed", got, err)
	}

	// A task of the second server leaves it a standby (its runner, kept,
	// or one started beside its turn), which exits once that server's
	// stdin ends: no runner of this install is left.
	raw = second.call("tools/call", map[string]any{"name": "prompt_send", "arguments": map[string]any{"prompt": "again"}, "task": map[string]any{}})
	if err := json.Unmarshal(raw, &created); err != nil || created.Task.TaskID == "" {
		t.Fatalf("the second task: %s", raw)
	}
	second.call("tasks/result", map[string]any{"taskId": created.Task.TaskID})
	if len(u.runners()) == 0 {
		t.Error("no runner lives beside the second server after its task: it keeps no standby")
	}
	second.close()
	deadline := time.Now().Add(time.Minute)
	for len(u.runners()) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if left := u.runners(); len(left) > 0 {
		t.Errorf("runner processes %v live a minute after their server's stdin ended", left)
	}
	log, _ := os.ReadFile(filepath.Join(u.profile, ".openprogram", "mcp-tasks.log"))
	t.Logf("task log:\n%s", log)
}

// runners are the pids of the live `mcp run-task` processes of this
// user's openprogram.exe (Wine shows a Windows process's command line in
// /proc).
func (u *windowsUser) runners() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), "run-task") && strings.Contains(string(cmdline), u.exeDir) {
			pids = append(pids, pid)
		}
	}
	return pids
}
