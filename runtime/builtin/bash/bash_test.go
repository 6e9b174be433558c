//go:build unix

package bash_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/bash"
	"github.com/openprogram/openprogram/runtime/secretenv"
	"github.com/openprogram/openprogram/runtime/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func run(t *testing.T, ctx context.Context, opts *bash.Options, args map[string]any) (tool.Result, []string) {
	t.Helper()
	raw, _ := json.Marshal(args)
	var mu sync.Mutex
	var updates []string
	res := tool.NewExecutor(nil).Execute(ctx, bash.New(opts), "c", raw, func(s string) {
		mu.Lock()
		updates = append(updates, s)
		mu.Unlock()
	})
	mu.Lock()
	defer mu.Unlock()
	return res, updates
}

func opts(t *testing.T) *bash.Options {
	return &bash.Options{WorkDirs: []string{t.TempDir()}}
}

func TestBashOutputExitCodeAndUpdates(t *testing.T) {
	res, updates := run(t, context.Background(), opts(t), map[string]any{"command": "echo one; echo two >&2; printf three"})
	if res.IsError {
		t.Fatalf("result IsError: %s", res.Text())
	}
	if diff := cmp.Diff("one\ntwo\nthree\n[exit code: 0]", res.Text()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"one", "two", "three"}, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
	if res.Details["exit_code"] != 0 {
		t.Errorf("exit_code = %v", res.Details["exit_code"])
	}
}

// TestBashNeverRunsInTheStateDir: whoever speaks, a command never starts
// with its working directory in the state directory (given by the call or
// the options, reached directly or through a symlink), so `> token` cannot
// replace the MCP token.
func TestBashNeverRunsInTheStateDir(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(root, "home")
	if err := os.MkdirAll(filepath.Join(state, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(state, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	raw := json.RawMessage(`{"command":"echo x > planted"}`)
	owner := func(workDir, stateDir string) tool.CallInfo {
		sp, err := authz.NewOwner("owner/install/fedcba9876543210", true, authz.Scope{WorkDirs: []string{workDir}, StateDir: stateDir})
		if err != nil {
			t.Fatal(err)
		}
		return tool.CallInfo{Speaker: sp}
	}
	for _, c := range []struct {
		name string
		opts bash.Options
		info tool.CallInfo
	}{
		{"options", bash.Options{WorkDirs: []string{state}, StateDir: state}, tool.CallInfo{}},
		{"call", bash.Options{}, owner(filepath.Join(state, "sub"), state)},
		{"symlink", bash.Options{}, owner(filepath.Join(root, "link"), state)},
		{"state dir given through a symlink", bash.Options{}, owner(state, filepath.Join(root, "link"))},
	} {
		ctx := tool.WithCall(context.Background(), c.info)
		res := tool.NewExecutor(nil).Execute(ctx, bash.New(&c.opts), "c", raw, nil)
		if !res.IsError || res.ReasonCode() != bash.ReasonProtectedDir || !strings.Contains(res.Text(), "inside a protected directory") {
			t.Errorf("%s: result = %+v, want PROTECTED_WORKDIR", c.name, res)
		}
	}
	for _, p := range []string{"planted", "sub/planted"} {
		if _, err := os.Lstat(filepath.Join(state, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	// Beside the state directory, commands run as before.
	ctx := tool.WithCall(context.Background(), owner(root, state))
	if res := tool.NewExecutor(nil).Execute(ctx, bash.New(nil), "c", json.RawMessage(`{"command":"true"}`), nil); res.IsError {
		t.Errorf("beside the state directory: %+v", res)
	}
}

func TestBashNonZeroExitIsError(t *testing.T) {
	res, _ := run(t, context.Background(), opts(t), map[string]any{"command": "echo failing; exit 3"})
	if !res.IsError || res.ReasonCode() != bash.ReasonExitNonZero || res.Details["exit_code"] != 3 {
		t.Errorf("result = %+v, want IsError EXIT_NONZERO exit 3", res)
	}
	if !strings.HasSuffix(res.Text(), "failing\n[exit code: 3]") {
		t.Errorf("text = %q", res.Text())
	}
}

func TestBashWorkingDirectory(t *testing.T) {
	o := opts(t)
	res, _ := run(t, context.Background(), o, map[string]any{"command": "pwd -P"})
	want, _ := filepath.EvalSymlinks(o.WorkDirs[0])
	if !strings.HasPrefix(res.Text(), want+"\n") {
		t.Errorf("pwd = %q, want %s", res.Text(), want)
	}
	other := t.TempDir()
	raw := json.RawMessage(`{"command":"pwd -P"}`)
	sp, err := authz.NewOwner("owner/install/fedcba9876543210", true, authz.Scope{WorkDirs: []string{other}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := tool.WithCall(context.Background(), tool.CallInfo{Speaker: sp})
	res = tool.NewExecutor(nil).Execute(ctx, bash.New(o), "c", raw, nil)
	want, _ = filepath.EvalSymlinks(other)
	if !strings.HasPrefix(res.Text(), want+"\n") {
		t.Errorf("pwd with CallInfo = %q, want %s", res.Text(), want)
	}
	res = tool.NewExecutor(nil).Execute(context.Background(), bash.New(nil), "c", raw, nil)
	if !res.IsError || res.ReasonCode() != bash.ReasonNoWorkDir {
		t.Errorf("without a workdir = %+v, want NO_WORKDIR", res)
	}
}

func TestBashStripsSecrets(t *testing.T) {
	o := opts(t)
	o.Env = []string{"PATH=" + os.Getenv("PATH"), "KEEP=1", "OPENPROGRAM_MCP_TOKEN=tok", "OPENAI_API_KEY=sk", "ANTHROPIC_API_KEY=ak", "my_api_key=x", "OPENPROGRAM_DATABASE_URL=postgres://u:p@h/db", "EXTRA_SECRET=e", "PGPASSWORD=pgpw", "PGPASSFILE=/pgpass"}
	o.Secrets = secretenv.New("EXTRA_SECRET")
	res, _ := run(t, context.Background(), o, map[string]any{"command": "env | sort"})
	text := res.Text()
	if !strings.Contains(text, "KEEP=1") {
		t.Errorf("KEEP missing from %q", text)
	}
	for _, secret := range []string{"tok", "sk", "ak", "my_api_key", "postgres://", "EXTRA_SECRET", "pgpw", "/pgpass"} {
		if strings.Contains(text, secret) {
			t.Errorf("environment leaked %q: %s", secret, text)
		}
	}
}

func TestBashTimeoutKillsGroup(t *testing.T) {
	o := opts(t)
	o.KillGrace = 200 * time.Millisecond
	start := time.Now()
	res, _ := run(t, context.Background(), o, map[string]any{"command": "echo started; sleep 30", "timeout_ms": 300})
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("timeout took %v", took)
	}
	if !res.IsError || res.ReasonCode() != tool.ReasonTimeout || res.Details["timeout"] != true || res.Details["killed"] != true {
		t.Errorf("result = %+v, want IsError TIMEOUT killed", res)
	}
	if !strings.Contains(res.Text(), "started\n[timed out after 300ms; process group killed]") {
		t.Errorf("text = %q", res.Text())
	}
}

// alive reports whether pid is a live (non-zombie) process.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	i := bytes.LastIndexByte(data, ')')
	state := strings.Fields(string(data[i+1:]))[0]
	return state != "Z" && state != "X"
}

func waitFile(t *testing.T, p string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(p)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never written", p)
	return 0
}

func TestBashCancelKillsGrandchildren(t *testing.T) {
	cases := map[string]string{
		"plain":         `sleep 300 & echo $! > child.pid; echo $$ > shell.pid; wait`,
		"ignores TERM":  `trap '' TERM; (trap '' TERM; sleep 300) & echo $! > child.pid; echo $$ > shell.pid; wait`,
		"nested shells": `bash -c 'sleep 300 & echo $! > child.pid; wait' & echo $$ > shell.pid; wait`,
	}
	for name, cmd := range cases {
		t.Run(name, func(t *testing.T) {
			o := opts(t)
			o.KillGrace = 300 * time.Millisecond
			dir := o.WorkDirs[0]
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan tool.Result, 1)
			go func() {
				res, _ := run(t, ctx, o, map[string]any{"command": cmd})
				done <- res
			}()
			child := waitFile(t, filepath.Join(dir, "child.pid"))
			shell := waitFile(t, filepath.Join(dir, "shell.pid"))
			if !alive(child) || !alive(shell) {
				t.Fatalf("processes not running before cancel: child %v shell %v", alive(child), alive(shell))
			}
			cancel()
			var res tool.Result
			select {
			case res = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Execute did not return after cancel")
			}
			if !res.IsError || res.ReasonCode() != tool.ReasonCancelled {
				t.Errorf("result = %+v, want IsError CANCELLED", res)
			}
			for _, pid := range []int{shell, child} {
				if alive(pid) {
					t.Errorf("pid %d survived the cancellation", pid)
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

func TestBashBackgroundChildDoesNotOutliveCall(t *testing.T) {
	o := opts(t)
	start := time.Now()
	res, _ := run(t, context.Background(), o, map[string]any{"command": `sleep 300 & echo $! > child.pid; echo done`})
	if res.IsError || !strings.HasPrefix(res.Text(), "done\n") {
		t.Fatalf("result = %+v", res)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Execute took %v with a background child", took)
	}
	child := waitFile(t, filepath.Join(o.WorkDirs[0], "child.pid"))
	if alive(child) {
		t.Errorf("background child %d survived the call", child)
		_ = syscall.Kill(child, syscall.SIGKILL)
	}
}

func TestBashEscapedProcessHoldingPipeDoesNotHang(t *testing.T) {
	if _, err := os.Stat("/usr/bin/setsid"); err != nil {
		t.Fatalf("setsid is needed for this test: %v", err)
	}
	o := opts(t)
	o.DrainTimeout = 300 * time.Millisecond
	start := time.Now()
	res, _ := run(t, context.Background(), o, map[string]any{"command": `setsid sleep 30 & echo $! > escaped.pid; echo out`})
	pid := waitFile(t, filepath.Join(o.WorkDirs[0], "escaped.pid"))
	defer syscall.Kill(pid, syscall.SIGKILL)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Execute took %v; a process outside the group holding the pipe must not hang it", took)
	}
	if res.IsError || !strings.HasPrefix(res.Text(), "out\n") {
		t.Errorf("result = %+v", res)
	}
}

func TestBashTruncatesLongOutput(t *testing.T) {
	o := opts(t)
	o.MaxOutputBytes = 100
	o.MaxUpdateLines = 5
	res, updates := run(t, context.Background(), o, map[string]any{"command": "for i in $(seq 1 1000); do echo line$i; done"})
	text := res.Text()
	if !strings.HasPrefix(text, "line1\nline2\n") || !strings.Contains(text, "bytes truncated ...]") || !strings.HasSuffix(text, "line1000\n[exit code: 0]") {
		t.Errorf("text = %q, want head, marker and tail", text)
	}
	want := []string{"line1", "line2", "line3", "line4", "line5", "[output beyond 5 lines is not streamed]"}
	if diff := cmp.Diff(want, updates); diff != "" {
		t.Errorf("updates (-want +got):\n%s", diff)
	}
}

func TestBashMetadata(t *testing.T) {
	b := bash.New(nil)
	if b.Name() != "bash" || b.Capability() != authz.ToolCapability("bash") {
		t.Errorf("bash metadata: %s %s", b.Name(), b.Capability())
	}
	if err := tool.NewRegistry().Register(b); err != nil {
		t.Errorf("Register(bash) = %v", err)
	}
	h := b.(tool.TimeoutHinter)
	if got := h.TimeoutHint(json.RawMessage(`{"command":"x","timeout_ms":60000}`)); got <= time.Minute {
		t.Errorf("TimeoutHint = %v, want more than the command's 1m", got)
	}
	if got := h.TimeoutHint(json.RawMessage(`{"command":"x"}`)); got <= bash.DefaultTimeout {
		t.Errorf("TimeoutHint default = %v", got)
	}
	raw, _ := json.Marshal(map[string]any{"command": "x", "timeout_ms": 600001})
	if err := tool.ValidateArgs(b, raw); err == nil {
		t.Errorf("timeout_ms over 10 minutes accepted")
	}
}
