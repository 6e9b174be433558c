//go:build unix

package e2etest

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// lockFile takes an exclusive lock on f, waiting for it unless wait is false.
func lockFile(f *os.File, wait bool) error {
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	return syscall.Flock(int(f.Fd()), how)
}

// unlockFile releases the lock lockFile took.
func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }

// dieLike ends this process by the signal that ended the child, if one did,
// and returns the shell's exit code for it.
func dieLike(ee *exec.ExitError) (int, bool) {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	signal.Reset(ws.Signal())
	_ = syscall.Kill(os.Getpid(), ws.Signal())
	return 128 + int(ws.Signal()), true
}
