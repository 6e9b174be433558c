//go:build windows

package bash_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"go.uber.org/goleak"
	"golang.org/x/sys/windows"

	"github.com/openprogram/openprogram/runtime/builtin/bash"
	"github.com/openprogram/openprogram/runtime/tool"
)

// fakeShellVar makes the test binary a shell: `<binary> -c <command>`
// with the few commands the tests below need.
const fakeShellVar = "OPENPROGRAM_BASH_TEST_SHELL"

func TestMain(m *testing.M) {
	if os.Getenv(fakeShellVar) == "1" {
		os.Exit(fakeShell(os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

var procIsProcessInJob = windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob")

// fakeShell runs `-c <command>`: "injob" says whether the process is in a
// job, "spawn <file>" starts a sleeping child, writes its pid to file and
// sleeps, "sleep" sleeps, "bytes <hex>" writes the bytes.
func fakeShell(args []string) int {
	if len(args) != 2 || args[0] != "-c" {
		fmt.Println("usage: -c <command>")
		return 2
	}
	verb, arg, _ := strings.Cut(args[1], " ")
	switch verb {
	case "injob":
		var in int32
		r, _, err := procIsProcessInJob.Call(uintptr(windows.CurrentProcess()), 0, uintptr(unsafe.Pointer(&in)))
		if r == 0 {
			fmt.Println("IsProcessInJob:", err)
			return 1
		}
		fmt.Println("in job:", in != 0)
	case "spawn":
		exe, _ := os.Executable()
		child := exec.Command(exe, "-c", "sleep")
		child.Env = os.Environ()
		if err := child.Start(); err != nil {
			fmt.Println(err)
			return 1
		}
		if err := os.WriteFile(arg, []byte(strconv.Itoa(child.Process.Pid)), 0o644); err != nil {
			fmt.Println(err)
			return 1
		}
		fmt.Println("spawned")
		time.Sleep(10 * time.Minute)
	case "sleep":
		time.Sleep(10 * time.Minute)
	case "bytes":
		b, err := hex.DecodeString(arg)
		if err != nil {
			return 2
		}
		os.Stdout.Write(b)
	default:
		return 127
	}
	return 0
}

func fakeOpts(t *testing.T) *bash.Options {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &bash.Options{WorkDirs: []string{t.TempDir()}, Shell: exe, Env: append(os.Environ(), fakeShellVar+"=1")}
}

func execute(ctx context.Context, t *testing.T, o *bash.Options, command string) tool.Result {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"command": command})
	return tool.NewExecutor(nil).Execute(ctx, bash.New(o), "c", raw, nil)
}

// TestBashRunsInItsJobFromTheStart: the command is created suspended and
// resumed only once it is in its kill-on-close job, so its first
// instruction already runs inside the job (nothing it starts can escape
// it).
func TestBashRunsInItsJobFromTheStart(t *testing.T) {
	res := execute(t.Context(), t, fakeOpts(t), "injob")
	if res.IsError || !strings.HasPrefix(res.Text(), "in job: true") {
		t.Fatalf("injob = %q (error %v), want in job: true", res.Text(), res.IsError)
	}
}

// TestBashCancelEndsTheTree: cancelling the call ends the shell and the
// child it started (the whole job).
func TestBashCancelEndsTheTree(t *testing.T) {
	o := fakeOpts(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan tool.Result, 1)
	go func() { done <- execute(ctx, t, o, "spawn "+pidFile) }()
	var pid int
	for pid == 0 {
		select {
		case res := <-done:
			t.Fatalf("the command ended before it was cancelled: %q", res.Text())
		case <-time.After(20 * time.Millisecond):
		}
		if b, err := os.ReadFile(pidFile); err == nil && len(b) > 0 {
			pid, _ = strconv.Atoi(string(b))
		}
	}
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		t.Fatalf("open the child: %v", err)
	}
	defer windows.CloseHandle(h)
	cancel()
	res := <-done
	if !res.IsError || res.Reason != tool.ReasonCancelled {
		t.Errorf("cancelled call = %q (%s), want a cancellation", res.Text(), res.Reason)
	}
	// Bounded only so that a failure ends the test: the job is closed by now.
	if ev, err := windows.WaitForSingleObject(h, 60_000); err != nil || ev != windows.WAIT_OBJECT_0 {
		t.Errorf("the shell's child %d still runs after the call was cancelled (wait %d, %v)", pid, ev, err)
	}
}

// TestBashOutputIsUTF8: output that is not UTF-8 is read in the console's
// code page, and the result is valid UTF-8.
func TestBashOutputIsUTF8(t *testing.T) {
	res := execute(t.Context(), t, fakeOpts(t), "bytes 636166e90d0a")
	if res.IsError || !utf8.ValidString(res.Text()) || !strings.HasPrefix(res.Text(), "caf") {
		t.Fatalf("bytes = %q (error %v), want valid UTF-8", res.Text(), res.IsError)
	}
	res = execute(t.Context(), t, fakeOpts(t), "bytes "+hex.EncodeToString([]byte("naïve ✓\n")))
	if res.IsError || !strings.HasPrefix(res.Text(), "naïve ✓\n") {
		t.Fatalf("UTF-8 bytes = %q, want them as they came", res.Text())
	}
}

// TestBashDescriptionNamesTheShell: the model reads which shell runs its
// command.
func TestBashDescriptionNamesTheShell(t *testing.T) {
	for shell, want := range map[string]string{`C:\Program Files\PowerShell\7\pwsh.exe`: "PowerShell syntax", `C:\Git\bin\bash.exe`: "bash.exe -c"} {
		b := bash.New(&bash.Options{Shell: shell})
		if !strings.Contains(b.Description(), want) {
			t.Errorf("Description with %s = %q, want it to say %q", shell, b.Description(), want)
		}
	}
	if d := bash.New(nil).Description(); !strings.Contains(d, "bash") && !strings.Contains(d, "PowerShell") {
		t.Errorf("default Description = %q names no shell", d)
	}
}
