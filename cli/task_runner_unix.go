//go:build unix

package cli

import "syscall"

// tasksOffered: on Unix, mcp serve offers durable tasks (a runner holds
// its runner slots by being handed their locked files).
const tasksOffered = true

// runnerSlots is how many slot descriptors a runner is handed with its
// task.
const runnerSlots = 2

// detached is how the task runner starts: a session of its own, so that
// neither the client's terminal nor its process group takes it down.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
