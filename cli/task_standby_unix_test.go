//go:build unix

package cli

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
)

// connPair is a connected pair: the serve's standby and the runner's end.
func connPair(t *testing.T) (*standby, *net.UnixConn) {
	t.Helper()
	fds, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "end")
		defer f.Close()
		c, err := net.FileConn(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return &standby{conn: conn(fds[0])}, conn(fds[1])
}

func slotFiles(t *testing.T, n int) []*os.File {
	t.Helper()
	var out []*os.File
	for i := range n {
		f, err := os.Create(filepath.Join(t.TempDir(), "slot"+string(rune('0'+i))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		out = append(out, f)
	}
	return out
}

// A handoff carries the client, the task, its runner lease and the runner slots, which the
// runner then holds (the same open files) close-on-exec.
func TestStandbyHandoff(t *testing.T) {
	sb, runner := connPair(t)
	held := slotFiles(t, runnerSlots)
	if err := sb.hand("0123456789abcdef", "task_ABC234", "RUNNER234", held); err != nil {
		t.Fatal(err)
	}
	h := receiveTask(runner)
	if h.err != nil || h.client != "0123456789abcdef" || h.task != "task_ABC234" || h.runner != "RUNNER234" || len(h.slots) != runnerSlots {
		t.Fatalf("received %+v", h)
	}
	for i, f := range h.slots {
		a, _ := f.Stat()
		b, _ := held[i].Stat()
		if !os.SameFile(a, b) {
			t.Errorf("slot %d is another file", i)
		}
		f.Close()
	}
	// The report of the end wakes the serve, which keeps the runner as its
	// standby: the next handoff is read whole after the answer.
	back := make(chan bool)
	go func() { back <- sb.waitEnd() }()
	reportEnd(runner)
	if !<-back {
		t.Fatal("waitEnd did not see the report")
	}
	if err := sb.stay(); err != nil {
		t.Fatal(err)
	}
	if err := sb.hand("0123456789abcdef", "task_NEXT", "RUNNER567", held); err != nil {
		t.Fatal(err)
	}
	if !keptAsStandby(runner) {
		t.Fatal("the runner did not read that it is kept")
	}
	if h := receiveTask(runner); h.err != nil || h.task != "task_NEXT" || len(h.slots) != runnerSlots {
		t.Fatalf("the next handoff: %+v", h)
	}
	// A serve that keeps another standby ends the connection: the runner
	// reads that it is not kept, and exits.
	go func() { back <- sb.waitEnd() }()
	reportEnd(runner)
	<-back
	sb.close()
	if keptAsStandby(runner) {
		t.Error("a closed connection kept the runner")
	}
}

// A standby whose serve goes away reads the end; a handoff without the
// slots, or with a malformed line, is refused.
func TestStandbyRefusesWhatIsNotAHandoff(t *testing.T) {
	sb, runner := connPair(t)
	sb.close()
	if h := receiveTask(runner); !errors.Is(h.err, io.EOF) {
		t.Errorf("after the serve closed: %+v, want io.EOF", h)
	}
	for _, c := range []struct {
		name, client, task, runner string
		slots                      int
	}{
		{"no slots", "0123456789abcdef", "task_1", "R1", 0},
		{"one slot", "0123456789abcdef", "task_1", "R1", 1},
		{"a space in the task", "0123456789abcdef", "task 1", "R1", 2},
		{"a long client", "0123456789abcdef0", "task_1", "R1", 2},
		{"a path", "0123456789abcdef", "../x", "R1", 2},
		{"no runner", "0123456789abcdef", "task_1", "", 2},
		{"a space in the runner", "0123456789abcdef", "task_1", "R 1", 2},
		{"a path as the runner", "0123456789abcdef", "task_1", "../r", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			sb, runner := connPair(t)
			if err := sb.hand(c.client, c.task, c.runner, slotFiles(t, c.slots)); err != nil {
				t.Fatal(err)
			}
			if h := receiveTask(runner); h.err == nil {
				t.Errorf("handoff accepted: %+v", h)
			}
		})
	}
}

// runnerPair is a connected pair: the serve's standby and the runner's
// channel.
func runnerPair(t *testing.T) (*standby, runnerConn) {
	sb, c := connPair(t)
	return sb, runnerConn{c}
}
