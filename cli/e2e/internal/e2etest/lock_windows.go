//go:build windows

package e2etest

import (
	"os"
	"os/exec"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive lock on f, waiting for it unless wait is false.
func lockFile(f *os.File, wait bool) error {
	flags := uint32(windows.LOCKFILE_EXCLUSIVE_LOCK)
	if !wait {
		flags |= windows.LOCKFILE_FAIL_IMMEDIATELY
	}
	return windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, new(windows.Overlapped))
}

// unlockFile releases the lock lockFile took.
func unlockFile(f *os.File) {
	_ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, new(windows.Overlapped))
}

// dieLike reports nothing: Windows ends processes with exit codes.
func dieLike(*exec.ExitError) (int, bool) { return 0, false }
