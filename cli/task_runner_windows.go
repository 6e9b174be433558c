//go:build windows

package cli

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// tasksOffered: on Windows, mcp serve offers no durable tasks. A runner
// holds its runner slots for its whole life by inheriting their locked
// files, which Windows does not pass to a child (exec.Cmd.ExtraFiles), and
// an unbounded runner is not offered.
const tasksOffered = false

// detached is how the task runner starts: a process group of its own and
// no console, so that the client's console and Ctrl+C do not take it down.
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS}
}

// keepSlots: a runner inherits no slots on Windows (tasksOffered).
func keepSlots(int) {}
