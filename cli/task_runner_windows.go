//go:build windows

package cli

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// detached is how the task runner starts: a process group of its own and
// no console, so that the client's console and Ctrl+C do not take it down.
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS}
}
