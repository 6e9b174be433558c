//go:build linux && (amd64 || arm64)

package perf

import (
	"fmt"
	"os"
	"syscall"
)

// dropPageCache evicts f's clean pages from the page cache
// (posix_fadvise(POSIX_FADV_DONTNEED)).
func dropPageCache(f *os.File) error {
	const fadvDontNeed = 4
	_, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0)
	if errno != 0 {
		return fmt.Errorf("posix_fadvise %s: %w", f.Name(), errno)
	}
	return nil
}
