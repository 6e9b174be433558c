//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The runner starts detached: its own session, stdin /dev/null, its
// connection to the serve on file descriptor 3, output to the task log
// (0600), no secret (and no task) in argv, and the environment without the
// token. It is handed the task on that connection.
func TestTaskSpawnerDetaches(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "out")
	// A stand-in for the binary: it reports what it was started with, then
	// waits to be looked at.
	exe := filepath.Join(root, "openprogram")
	script := "#!/bin/sh\n" +
		"printf '%s\\n' \"$@\" > " + out + ".$$.args\n" +
		"env > " + out + ".$$.env\n" +
		"readlink /proc/self/fd/0 > " + out + ".$$.stdin 2>/dev/null || echo unknown > " + out + ".$$.stdin\n" +
		"readlink /proc/self/fd/3 > " + out + ".$$.fd3 2>/dev/null || echo unknown > " + out + ".$$.fd3\n" +
		"echo to-the-log\n" +
		"echo $$ >> " + out + ".pids\n" +
		"exec sleep 30\n"
	if err := os.WriteFile(exe, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	sp := &taskSpawner{exe: exe, stateDir: state, logLevel: "debug", logFormat: "json",
		env: []string{"PATH=" + os.Getenv("PATH"), "OPENPROGRAM_MCP_TOKEN=secret-token", "OPENPROGRAM_PROFILE=p",
			"OPENPROGRAM_HOME=elsewhere", "OPENAI_API_KEY=model-key"}}
	if err := sp.start(t.Context(), "0123456789abcdef", "task-1", "RUNNER1"); err != nil {
		t.Fatalf("start: %v", err)
	}
	// The task's runner, then the standby started for the next task.
	var pids []int
	deadline := time.Now().Add(30 * time.Second)
	for len(pids) < 2 {
		data, _ := os.ReadFile(out + ".pids")
		pids = pids[:0]
		for _, f := range strings.Fields(string(data)) {
			n, _ := strconv.Atoi(f)
			pids = append(pids, n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runner and the standby did not start within 30s: %v", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		sp.close()
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	pid := pids[0]
	out += "." + strconv.Itoa(pid)

	sid, err := unix.Getsid(pid)
	if err != nil {
		t.Fatalf("getsid(%d): %v", pid, err)
	}
	if sid != pid {
		t.Errorf("the runner's session = %d, want its own (%d)", sid, pid)
	}
	if pgid, _ := syscall.Getpgid(pid); pgid != pid {
		t.Errorf("the runner's process group = %d, want its own (%d)", pgid, pid)
	}
	read := func(suffix string) string {
		data, err := os.ReadFile(out + suffix)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	args := strings.Split(strings.TrimSuffix(read(".args"), "\n"), "\n")
	if want := []string{"mcp", "run-task", "--log-level", "debug", "--log-format", "json"}; !slices.Equal(args, want) {
		t.Errorf("argv = %q, want %q", args, want)
	}
	if runtime.GOOS == "linux" {
		if got := strings.TrimSpace(read(".stdin")); got != os.DevNull {
			t.Errorf("stdin = %q, want %s", got, os.DevNull)
		}
		if got := strings.TrimSpace(read(".fd3")); !strings.HasPrefix(got, "socket:") {
			t.Errorf("file descriptor 3 = %q, want the socket to the serve", got)
		}
	}
	env := read(".env")
	if strings.Contains(env, "secret-token") || strings.Contains(env, "OPENPROGRAM_PROFILE") || strings.Contains(env, "elsewhere") {
		t.Errorf("the runner's environment holds the token, the profile or the old home:\n%s", env)
	}
	for _, want := range []string{"OPENPROGRAM_HOME=" + state + "\n", "OPENAI_API_KEY=model-key\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("the runner's environment lacks %q:\n%s", want, env)
		}
	}
	log := filepath.Join(state, TaskLogFileName)
	fi, err := os.Stat(log)
	if err != nil {
		t.Fatalf("the task log: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("the task log has mode %04o, want 0600", fi.Mode().Perm())
	}
	if data, _ := os.ReadFile(log); !strings.Contains(string(data), "to-the-log") {
		t.Errorf("the runner's stdout did not go to the task log: %q", data)
	}
}

func TestTaskSpawnerRefusesARelativeBinary(t *testing.T) {
	sp := &taskSpawner{exe: "openprogram", stateDir: t.TempDir()}
	if err := sp.start(t.Context(), "c", "t", "r"); err == nil {
		t.Fatal("start with a relative binary path succeeded")
	}
}

// A runner whose task ended comes back as the standby before anything
// waiting for that task is woken (a client that sends its next task as soon
// as it has the result finds it), and the timer that gives a lasting turn a
// standby beside it starts none for a task that already ended: each runner
// started afresh costs a process start and a host open, and the next task
// may wait for them. The timers are fired by hand, in an order chosen here.
func TestTaskSpawnerKeepsTheRunnerOfAShortTask(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	pids, release := filepath.Join(root, "pids"), filepath.Join(root, "release")
	// A stand-in runner that speaks the serve's protocol: it reads a
	// handoff, reports the task ended (a task named "long-..." only once
	// the release file exists), and waits for the next handoff if it is
	// kept as the standby.
	script := "#!/bin/sh\n" +
		"echo $$ >> " + pids + "\n" +
		"while read -r client task runner <&3; do\n" +
		"  case $task in long-*) while [ ! -e " + release + " ]; do sleep 0.01; done;; esac\n" +
		"  echo ended >&3\n" +
		"  read -r answer <&3 || exit 0\n" +
		"  [ \"$answer\" = stay ] || exit 0\n" +
		"done\n"
	exe := filepath.Join(root, "openprogram")
	if err := os.WriteFile(exe, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	var timers []func()
	sp := &taskSpawner{exe: exe, stateDir: state, logLevel: "debug", logFormat: "text",
		env:   []string{"PATH=" + os.Getenv("PATH")},
		after: func(_ time.Duration, f func()) { timers = append(timers, f) }}
	started := func() []int {
		data, _ := os.ReadFile(pids)
		var out []int
		for _, f := range strings.Fields(string(data)) {
			n, _ := strconv.Atoi(f)
			out = append(out, n)
		}
		return out
	}
	t.Cleanup(func() {
		sp.close()
		for _, p := range started() {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	})
	standby := func() *standby {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		return sp.standby
	}

	if err := sp.start(t.Context(), "0123456789abcdef", "short-1", "RUNNER1"); err != nil {
		t.Fatalf("start: %v", err)
	}
	if ended := sp.ended("short-1"); ended != nil {
		<-ended
	}
	if standby() == nil {
		t.Fatal("the short task's end was reported before its runner came back as the standby")
	}
	if err := sp.start(t.Context(), "0123456789abcdef", "long-2", "RUNNER2"); err != nil {
		t.Fatalf("start: %v", err)
	}
	if n := len(started()); n != 1 {
		t.Fatalf("%d runners started for the second task, want it handed to the standby", n)
	}
	// The first task's timer fires while the second task runs: the first
	// task ended long ago, so no runner is started.
	if len(timers) != 2 {
		t.Fatalf("%d standby timers set for two tasks, want 2", len(timers))
	}
	timers[0]()
	if standby() != nil {
		t.Fatal("the timer of a task that had ended started a standby beside a task that runs")
	}
	// The second task's turn lasts: its timer starts a standby beside it.
	timers[1]()
	if standby() == nil {
		t.Fatal("the timer of a lasting task started no standby beside it")
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}
