//go:build unix

package privatefile

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/openprogram/openprogram/internal/shell"
)

// Create creates a new file at path for writing, mode [Mode] whatever the
// umask. It fails when anything, a symlink included, is at path already.
func Create(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, Mode)
	if err != nil {
		return nil, err
	}
	// What open(2) made of the mode depends on the umask.
	if err := f.Chmod(Mode); err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return f, nil
}

// createTemp is [os.CreateTemp] with the mode set to [Mode].
func createTemp(dir, prefix, suffix string) (*os.File, error) {
	f, err := os.CreateTemp(dir, prefix+"*"+suffix)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(Mode); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// OpenNoFollow opens path for reading without following a symlink at its
// last element and without blocking on a FIFO.
func OpenNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

func openAppend(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, Mode)
}

// CheckPrivate returns an error when the open file f grants anything to
// group or others.
func CheckPrivate(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("mode %04o grants access to others", perm)
	}
	return nil
}

// RestrictCommand is the command that makes the file at path owner-only,
// the path quoted for the shell it is pasted into.
func RestrictCommand(path string) string { return "chmod 600 " + shell.Native.Quote(path) }

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Restrict makes the regular file at path mode [Mode] when it grants
// anything to group or others (a file this program wrote, saved again by
// another program under its own umask). It returns the mode the file had,
// and whether it changed it. A symlink at path is refused, not followed.
func Restrict(path string) (was fs.FileMode, changed bool, err error) {
	f, err := OpenNoFollow(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, false, err
	}
	if !fi.Mode().IsRegular() {
		return 0, false, fmt.Errorf("%s is not a regular file", path)
	}
	was = fi.Mode().Perm()
	if was&0o077 == 0 {
		return was, false, nil
	}
	if err := f.Chmod(Mode); err != nil {
		return was, false, fmt.Errorf("make %s mode 0600: %w", path, err)
	}
	return was, true, nil
}

// Mkdir creates the directory path with mode 0700, whatever the umask.
// Like [os.Mkdir], it fails when anything is at path already.
func Mkdir(path string) error {
	if err := os.Mkdir(path, 0o700); err != nil {
		return err
	}
	return os.Chmod(path, 0o700)
}

// MkdirAll creates path and its missing parents with mode 0700 (less the
// umask, as [os.MkdirAll]).
func MkdirAll(path string) error { return os.MkdirAll(path, 0o700) }

// SyncDir fsyncs the directory dir, so that a link or rename in it is
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// RenameOver renames oldpath over newpath atomically (os.Rename): on Unix an
// open handle of newpath never stands in the way.
func RenameOver(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
