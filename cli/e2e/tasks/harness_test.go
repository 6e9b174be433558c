//go:build unix

package tasks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli"
	"github.com/openprogram/openprogram/cli/e2e/fakemodel"
	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/cli/e2e/internal/interoptest"
)

// slowAnswer is what the fake model answers once a slow turn is over.
const slowAnswer = "the long work is done"

// install is one fresh OpenProgram installation (e2etest.Install) whose
// model is a fake on loopback that holds its answer for the turn's length,
// driven by the TypeScript SDK through interop/ts/tasks.mjs, every server
// started through the frame tee.
type install struct {
	*e2etest.Install
	t    *testing.T
	fake *fakemodel.Server
	// asked is closed when the model was first asked (a turn is running).
	asked   chan struct{}
	release chan struct{} // closed by answer
	once    sync.Once
	server  string // what tasks.mjs starts: the frame tee in front of the binary
	scripts string // interop/ts, its npm packages installed
}

// newInstall makes the state directory, its token and the fake model, on
// backend (e2etest's "sqlite" or "postgres"); the model answers after turn.
func newInstall(t *testing.T, backend string, turn time.Duration) *install {
	t.Helper()
	in := &install{t: t, asked: make(chan struct{}), release: make(chan struct{}), scripts: interoptest.Project(t, "ts")}
	var once sync.Once
	in.fake = fakemodel.NewChatCompletions(func([]fakemodel.Result) fakemodel.Step {
		once.Do(func() { close(in.asked) })
		select {
		case <-time.After(turn):
		case <-in.release:
		}
		return fakemodel.Step{Text: slowAnswer}
	})
	// Cleanups run last first: runners are stopped, then the fake released
	// and closed (the tee's frames are checked after them).
	t.Cleanup(func() {
		in.answer()
		in.fake.Close()
	})
	in.server = e2etest.FrameTee(t)
	in.Install = e2etest.NewInstall(t, backend)
	t.Cleanup(in.stopRunners)
	for _, kv := range [][2]string{
		{"model.provider", "openai"}, {"model.name", "fake"}, {"model.base_url", in.fake.URL + "/v1"},
		{"model.api_key_env", "none"}, {"model.timeout", "5m"}, // tasks are on by default
	} {
		in.MustRun("config", "set", kv[0], kv[1])
	}
	return in
}

// answer makes the fake model answer every turn now.
func (in *install) answer() { in.once.Do(func() { close(in.release) }) }

// outcome is what one tasks.mjs step printed last.
type outcome struct {
	OK    json.RawMessage `json:"ok"`
	Error *struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	transcript string
	took       time.Duration
}

// ok decodes the step's result into v, failing the test if it was an error.
func (o outcome) ok(t *testing.T, v any) {
	t.Helper()
	if o.Error != nil || o.OK == nil {
		t.Fatalf("want a result, got an error %+v\n%s", o.Error, o.transcript)
	}
	if err := json.Unmarshal(o.OK, v); err != nil {
		t.Fatalf("decode %s: %v", o.OK, err)
	}
}

// rpcError requires the step to have failed with JSON-RPC error code.
func (o outcome) rpcError(t *testing.T, code int) string {
	t.Helper()
	if o.Error == nil || o.Error.Code == nil || *o.Error.Code != code {
		t.Fatalf("want JSON-RPC error %d, got ok=%s error=%+v\n%s", code, o.OK, o.Error, o.transcript)
	}
	return o.Error.Message
}

// step runs one tasks.mjs step with token (and env added to the
// environment): a new client process and a new server process.
func (in *install) step(token, name, arg string, env ...string) outcome {
	in.t.Helper()
	dir := in.scripts
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "tasks.mjs"), in.server, in.Home, name, arg)
	cmd.Dir = dir
	cmd.Env = in.Env(append([]string{"OPENPROGRAM_MCP_TOKEN=" + token, "LANG=C.UTF-8"}, env...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	o := outcome{transcript: out.String(), took: time.Since(start)}
	in.t.Logf("tasks.mjs %s %s: %s", name, arg, o.took.Round(time.Millisecond))
	if err != nil {
		in.t.Fatalf("tasks.mjs %s: %v\n%s", name, err, out.String())
	}
	if strings.Contains(out.String(), token) {
		in.t.Errorf("the transcript of tasks.mjs %s holds the token", name)
	}
	e2etest.CheckStderr(in.t, "tasks.mjs "+name, out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	raw, found := strings.CutPrefix(last, "OUTCOME ")
	if !found {
		in.t.Fatalf("tasks.mjs %s printed no OUTCOME line:\n%s", name, out.String())
	}
	if err := json.Unmarshal([]byte(raw), &o); err != nil {
		in.t.Fatalf("tasks.mjs %s: OUTCOME %s: %v", name, raw, err)
	}
	return o
}

// task is the part of the MCP Task object the tests look at.
type task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage"`
	TTL           *int64 `json:"ttl"`
	PollInterval  *int64 `json:"pollInterval"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
}

// started is what the start step returns.
type started struct {
	Created       task            `json:"created"`
	Status        task            `json:"status"`
	ToolExecution json.RawMessage `json:"toolExecution"`
	Early         string          `json:"early"`
}

// startTask starts a task with callToolStream (env added to tasks.mjs's
// environment), waits for the runner to ask the model, and returns the task.
func (in *install) startTask(prompt string, env ...string) started {
	in.t.Helper()
	var s started
	in.step(in.Token, "start", prompt, env...).ok(in.t, &s)
	if s.Created.TaskID == "" || s.Early != "" {
		in.t.Fatalf("callToolStream did not create a task: %+v", s)
	}
	in.waitAsked(s.Created.TaskID)
	return s
}

// waitAsked waits until the model was first asked, by the runner of task
// id.
func (in *install) waitAsked(id string) {
	in.t.Helper()
	select {
	case <-in.asked:
	case <-time.After(2 * time.Minute):
		in.t.Fatalf("the runner of task %s did not ask the model within 2 minutes; task log:\n%s", id, in.taskLog())
	}
}

// swept returns task id once it is no longer working (the sweep of a
// later `mcp serve`, each step's, settled it once its runner's lease
// lapsed), or as it is after three minutes.
func (in *install) swept(id string) task {
	in.t.Helper()
	var got task
	deadline := time.Now().Add(3 * time.Minute)
	for {
		in.step(in.Token, "get", id).ok(in.t, &got)
		if got.Status != "working" || time.Now().After(deadline) {
			return got
		}
		time.Sleep(2 * time.Second)
	}
}

// taskLog is the runners' log file.
func (in *install) taskLog() string {
	data, _ := os.ReadFile(filepath.Join(in.Home, cli.TaskLogFileName))
	return string(data)
}

// liveRunners returns the pids of the live `openprogram mcp run-task`
// processes for which match, given the process's /proc directory and its
// arguments, holds.
func liveRunners(match func(dir string, args []string) bool) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) > 2 && args[1] == "mcp" && args[2] == "run-task" && match(dir, args) && !zombie(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// runnerLine is a runner's log line about a task: its message, task and
// pid.
var runnerLine = regexp.MustCompile(`msg="task runner (started|done|failed)".* task_id=(\S+)(?: .*pid=(\d+))?`)

// runners returns the pids of the live runner processes that run task id
// now: the task log names the runner a task was handed to (a runner is
// handed its task by the serve, not given it in argv), and a runner that
// logged the task's end runs it no more.
func (in *install) runners(id string) []int {
	running := map[int]bool{}
	var last int
	for line := range strings.SplitSeq(in.taskLog(), "\n") {
		m := runnerLine.FindStringSubmatch(line)
		if m == nil || m[2] != id {
			continue
		}
		switch m[1] {
		case "started":
			last, _ = strconv.Atoi(m[3])
			running[last] = true
		default:
			delete(running, last)
		}
	}
	live := in.runnersOfInstall()
	var pids []int
	for pid := range running {
		if slices.Contains(live, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func zombie(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' || stat[i+2] == 'X'
}

// runnersOfInstall returns the pids of every live runner whose environment
// names this install's state directory: those running a task and the
// standbys.
func (in *install) runnersOfInstall() []int {
	want := []byte("OPENPROGRAM_HOME=" + in.Home + "\x00")
	return liveRunners(func(dir string, _ []string) bool {
		environ, err := os.ReadFile(filepath.Join(dir, "environ"))
		return err == nil && bytes.Contains(environ, want)
	})
}

// serveConn is one `mcp serve` of the install over raw pipes, initialized.
type serveConn struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	sc     *bufio.Scanner
	stderr *e2etest.LockedBuffer
	next   int
}

// serve starts `mcp serve` and initializes it; the server is stopped (its
// stdin closed) when the test ends.
func (in *install) serve(t *testing.T) *serveConn {
	t.Helper()
	cmd := exec.Command(in.server, "mcp", "serve")
	cmd.Env = in.Env(e2etest.EnvToken + "=" + in.Token)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &serveConn{t: t, cmd: cmd, stdin: stdin, stderr: &e2etest.LockedBuffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	c.sc = bufio.NewScanner(stdout)
	c.sc.Buffer(make([]byte, 1<<20), 1<<20)
	c.read(c.send("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "tasks-e2e", "version": "1"}}))
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// send writes a request and returns its id.
func (c *serveConn) send(method string, params any) string {
	c.next++
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		c.t.Fatalf("write %s: %v\nstderr:\n%s", method, err, c.stderr.String())
	}
	return strconv.Itoa(c.next)
}

// read returns the response to id, skipping other frames.
func (c *serveConn) read(id string) e2etest.Frame {
	for c.sc.Scan() {
		f, err := e2etest.ParseFrame(c.sc.Bytes())
		if err != nil {
			c.t.Fatalf("stdout line %q: %v", c.sc.Bytes(), err)
		}
		if f.IsResponse() && f.ID() == id {
			return f
		}
	}
	c.t.Fatalf("stdout ended before the response to %s: %v\nstderr:\n%s", id, c.sc.Err(), c.stderr.String())
	return e2etest.Frame{}
}

// createTask sends a task-augmented prompt_send and returns the task id
// ("" when no task was created).
func (c *serveConn) createTask(prompt string) string {
	f := c.read(c.send("tools/call", map[string]any{"name": "prompt_send", "arguments": map[string]any{"prompt": prompt}, "task": map[string]any{}}))
	var res struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if raw, ok := f.Members["result"]; ok && json.Unmarshal(raw, &res) == nil {
		return res.Task.TaskID
	}
	return ""
}

// close ends the server's stdin and waits for it to exit.
func (c *serveConn) close() {
	_ = c.stdin.Close()
	_ = c.cmd.Wait()
}

// stopRunners kills what runners of this install still run, so that the
// state directory can be removed.
func (in *install) stopRunners() {
	for _, pid := range in.runnersOfInstall() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	e2etest.Eventually(in.t, "the install's runners to be gone", time.Minute, func() bool { return len(in.runnersOfInstall()) == 0 })
}
