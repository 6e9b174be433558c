//go:build unix

package cli

import "syscall"

// tasksOffered: on Unix, mcp serve offers durable tasks (a runner holds
// its runner slots by inheriting their locked files).
const tasksOffered = true

// detached is how the task runner starts: a session of its own, so that
// neither the client's terminal nor its process group takes it down.
// runnerSlots is how many slot descriptors a runner inherits, from fd 3.
const runnerSlots = 2

func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// keepSlots keeps the n runner slots the runner inherited (from file
// descriptor 3) this process's alone: no process it starts inherits them,
// so they are free again when it exits.
func keepSlots(n int) {
	for fd := 3; fd < 3+min(max(n, 0), runnerSlots); fd++ {
		syscall.CloseOnExec(fd)
	}
}
