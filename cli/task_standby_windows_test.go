//go:build windows

package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/cli/internal/slots"
)

// runnerPair is a connected pair: the serve's standby and the runner's
// channel, two pipes as a runner's stdin and stdout are.
func runnerPair(t *testing.T) (*standby, runnerConn) {
	t.Helper()
	toR, toW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sb := &standby{to: toW, from: bufio.NewReader(fromR), fromFile: fromR, pid: os.Getpid()}
	t.Cleanup(func() {
		sb.close() // first: a read of the runner's stdin ends
		toR.Close()
		fromW.Close()
	})
	return sb, runnerConn{in: bufio.NewReader(toR), out: fromW}
}

// handAsync hands a task to sb and returns where the handoff's outcome
// comes: it returns once the runner answered.
func handAsync(sb *standby, taskID string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- sb.hand(testClient, taskID, "R1", nil) }()
	return done
}

const testClient = "0123456789abcdef"

// held is how many of the n slots named name of state are held.
func held(t *testing.T, state, name string, n int) int {
	t.Helper()
	got, err := slots.Held(filepath.Join(state, slots.DirName), name, n)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// On Windows the runner takes its own runner slots once handed its task,
// and the handoff returns once it holds them ("took"): a second runner of
// a client whose max_working is 1 waits for the slot, and when none frees
// in time declines the task with the reason, which the serve reads. The
// first runner reports its task's end, is kept as the standby and gives
// its slots back; the third, waiting, then takes them. A standby whose
// serve ends its stdin reads the end.
func TestWindowsStandbyTakesItsSlots(t *testing.T) {
	state := t.TempDir()
	tc := host.TasksConfig{MaxWorking: 1, MaxRunners: 4}

	sb, rc := runnerPair(t)
	handed := handAsync(sb, "task_1")
	hd := rc.receive()
	if hd.err != nil || hd.client != testClient || hd.task != "task_1" || hd.runner != "R1" {
		t.Fatalf("received %+v", hd)
	}
	if err := rc.hold(t.Context(), &hd, state, tc); err != nil {
		t.Fatalf("hold: %v", err)
	}
	if err := <-handed; err != nil {
		t.Fatalf("hand: %v", err)
	}
	if len(hd.slots) != 2 || held(t, state, "client-"+testClient, 1) != 1 || held(t, state, "host", 4) != 1 {
		t.Fatalf("the runner holds %d slots; held: client %d, host %d", len(hd.slots),
			held(t, state, "client-"+testClient, 1), held(t, state, "host", 4))
	}

	// A second runner of the client: no slot frees, it declines.
	sb2, rc2 := runnerPair(t)
	handed2 := handAsync(sb2, "task_2")
	hd2 := rc2.receive()
	short, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := rc2.hold(short, &hd2, state, tc); !errors.Is(err, slots.ErrFull) {
		t.Fatalf("the second runner's hold: %v, want slots.ErrFull", err)
	}
	if err := <-handed2; !errors.Is(err, errRunnerDeclined) || !strings.Contains(err.Error(), "1 runners of this client still run") {
		t.Fatalf("the second handoff: %v, want the runner's reason", err)
	}
	if len(hd2.slots) != 0 || held(t, state, "host", 4) != 1 {
		t.Fatalf("the declining runner holds %d slots (host slots held: %d)", len(hd2.slots), held(t, state, "host", 4))
	}

	// A third waits for the slot the first gives back as it stays.
	sb3, rc3 := runnerPair(t)
	handed3 := handAsync(sb3, "task_3")
	hd3 := rc3.receive()
	took3 := make(chan error, 1)
	go func() { took3 <- rc3.hold(t.Context(), &hd3, state, tc) }()

	back := make(chan bool, 1)
	go func() { back <- sb.waitEnd() }()
	rc.reportEnd()
	if !<-back {
		t.Fatal("waitEnd did not see the report")
	}
	if err := sb.stay(); err != nil {
		t.Fatal(err)
	}
	if !rc.kept() {
		t.Fatal("the runner did not read that it is kept")
	}
	for _, f := range hd.slots {
		f.Close()
	}
	if err := <-took3; err != nil {
		t.Fatalf("the third runner, once the slot was given back: %v", err)
	}
	if err := <-handed3; err != nil {
		t.Fatalf("the third handoff: %v", err)
	}
	for _, f := range hd3.slots {
		f.Close()
	}

	// The serve goes away: the standby reads the end of its stdin.
	sb.close()
	if h := rc.receive(); !errors.Is(h.err, io.EOF) {
		t.Errorf("the standby after its serve closed: %+v, want io.EOF", h)
	}
}

// A malformed handoff is refused, as on Unix.
func TestWindowsStandbyRefusesAMalformedHandoff(t *testing.T) {
	sb, rc := runnerPair(t)
	if _, err := sb.to.Write([]byte("0123456789abcdef ../x R1\n")); err != nil {
		t.Fatal(err)
	}
	if h := rc.receive(); !errors.Is(h.err, errMalformedHandoff) {
		t.Errorf("received %+v, want errMalformedHandoff", h)
	}
}

// A runner starts out of the client's job; in a job that forbids
// breakaway (the default of a job) it starts in the job instead, which is
// logged once. The test runs in a child process of its own, which it puts
// in such a job.
func TestRunnerStartsInAJobThatForbidsBreakaway(t *testing.T) {
	if os.Getenv("OPENPROGRAM_TEST_IN_JOB") == "1" {
		startInJob(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRunnerStartsInAJobThatForbidsBreakaway$", "-test.v")
	cmd.Env = append(os.Environ(), "OPENPROGRAM_TEST_IN_JOB=1")
	out, err := cmd.CombinedOutput()
	switch {
	case strings.Contains(string(out), "breakaway not enforced"):
		t.Skipf("this system (Wine) let the runner break away from a job that forbids it; the fallback runs on Windows:\n%s", out)
	case err != nil || !strings.Contains(string(out), "started in the job, logged once"):
		t.Fatalf("in a job that forbids breakaway: %v\n%s", err, out)
	}
}

// startInJob puts this process in a new job (no JOB_OBJECT_LIMIT_BREAKAWAY_OK)
// and starts two runners (stand-ins: this test binary, running no test).
func startInJob(t *testing.T) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(job)
	if err := windows.AssignProcessToJobObject(job, windows.CurrentProcess()); err != nil {
		t.Fatalf("put the test in a job: %v", err)
	}
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.SysProcAttr = detached()
		started, err := startDetached(cmd, log)
		if err != nil {
			t.Fatalf("start a runner in the job: %v", err)
		}
		if err := started.Wait(); err != nil {
			t.Fatalf("the runner: %v", err)
		}
		if started.SysProcAttr.CreationFlags&windows.CREATE_BREAKAWAY_FROM_JOB != 0 {
			fmt.Println("breakaway not enforced")
			return
		}
	}
	if !breakawayDenied.Load() || strings.Count(logged.String(), "break away") != 1 {
		t.Fatalf("breakawayDenied %v; log:\n%s", breakawayDenied.Load(), logged.String())
	}
	fmt.Println("started in the job, logged once")
}
