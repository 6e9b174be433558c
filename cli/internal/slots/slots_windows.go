//go:build windows

package slots

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// try takes the slot at path, or returns nil when another holds it: an
// exclusive LockFileEx lock on the file's first byte, which Windows drops
// when the file is closed or its process ends. (Windows passes no open
// file to a child process the way Unix does, so a task's runner takes its
// slots itself there instead of being handed them.)
func try(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("slots: open %s: %w", path, err)
	}
	var ol windows.Overlapped
	switch err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol); {
	case err == nil:
		return f, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		f.Close()
		return nil, nil
	default:
		f.Close()
		return nil, fmt.Errorf("slots: lock %s: %w", path, err)
	}
}
