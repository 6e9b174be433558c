//go:build windows

package cli

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// detached is how the task runner starts: a process group of its own, no
// console (so the client's console and its Ctrl+C or Ctrl+Break do not
// reach it; CREATE_NO_WINDOW is moot with DETACHED_PROCESS, which Windows
// documents it is ignored with), and out of the client's job, so that a
// job the client closes does not end the task (startStandby starts it
// again without the breakaway when the job forbids it).
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS | windows.CREATE_BREAKAWAY_FROM_JOB}
}

// handing holds a value while this process hands a task. Windows passes
// no locked file to a child, so a runner takes its runner slots itself
// once handed its task, waiting up to runnerSlotWait; a process (one `mcp
// serve`, one taskSpawner) hands one task at a time, so that at most one
// of its runners waits for slots at any moment besides its standby.
var handing = make(chan struct{}, 1)

// beforeHandoff waits until no other handoff of this process is in
// progress (or ctx ends); done lets the next one go. No slot is taken
// here: the runner takes its own (runnerConn.hold), and the handoff
// (standby.hand) returns once it holds them or failed to.
func (s *taskSpawner) beforeHandoff(ctx context.Context, _ string) (held []*os.File, done func(), err error) {
	select {
	case handing <- struct{}{}:
		return nil, func() { <-handing }, nil
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("start the task runner: wait for the previous task's handoff: %w", context.Cause(ctx))
	}
}
