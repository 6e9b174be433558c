//go:build windows

package cli

import (
	"errors"
	"net"
	"os"
	"os/exec"
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

// errNoRunners: no task runner runs on Windows (tasksOffered).
var errNoRunners = errors.New("durable MCP tasks are not offered on Windows")

// standby: no task runner runs on Windows (tasksOffered).
type standby struct{ pid int }

func startStandby(*exec.Cmd) (*standby, error)                 { return nil, errNoRunners }
func (*standby) hand(string, string, string, []*os.File) error { return errNoRunners }
func (*standby) waitEnd() bool                                 { return false }
func (*standby) stay() error                                   { return errNoRunners }
func (*standby) close()                                        {}
func standbyConn() (*net.UnixConn, error)                      { return nil, errNoRunners }
func receiveTask(*net.UnixConn) handoff                        { return handoff{err: errNoRunners} }
func keptAsStandby(*net.UnixConn) bool                         { return false }
func reportEnd(*net.UnixConn)                                  {}
