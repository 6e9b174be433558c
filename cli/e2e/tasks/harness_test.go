//go:build unix

package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	select {
	case <-in.asked:
	case <-time.After(2 * time.Minute):
		in.t.Fatalf("the runner of task %s did not ask the model within 2 minutes; task log:\n%s", s.Created.TaskID, in.taskLog())
	}
	return s
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

// runners returns the pids of the live runner processes of task id.
func runners(id string) []int {
	return liveRunners(func(_ string, args []string) bool { return args[len(args)-1] == id })
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
// names this install's state directory.
func (in *install) runnersOfInstall() []int {
	want := []byte("OPENPROGRAM_HOME=" + in.Home + "\x00")
	return liveRunners(func(dir string, _ []string) bool {
		environ, err := os.ReadFile(filepath.Join(dir, "environ"))
		return err == nil && bytes.Contains(environ, want)
	})
}

// stopRunners kills what runners of this install still run, so that the
// state directory can be removed.
func (in *install) stopRunners() {
	for _, pid := range in.runnersOfInstall() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	e2etest.Eventually(in.t, "the install's runners to be gone", time.Minute, func() bool { return len(in.runnersOfInstall()) == 0 })
}
