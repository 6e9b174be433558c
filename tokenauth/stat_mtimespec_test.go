//go:build darwin || freebsd || netbsd

package tokenauth_test

import "syscall"

// mtimeOf is the file's modification time as this system's stat reports it.
func mtimeOf(st *syscall.Stat_t) syscall.Timespec { return st.Mtimespec }
