//go:build unix

package safedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// DirMode is the mode of every directory that [Open] creates.
const DirMode = 0o700

// Dir is an open directory that passed the checks of [Open].
type Dir struct {
	fd   int
	path string
}

// Fd returns the directory's file descriptor, for the *at system calls.
// It stays valid until [Dir.Close].
func (d *Dir) Fd() int { return d.fd }

// Path returns the absolute, cleaned path the directory was opened by.
func (d *Dir) Path() string { return d.path }

// Close closes the directory. Calling it again does nothing.
func (d *Dir) Close() error {
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	return err
}

// Open makes path absolute and clean, then opens the directory that holds
// its last element and returns it with that element's name.
//
// Every component from the root down to that directory must be a real
// directory: a symlink anywhere is an error, wherever it points. Ancestors
// may belong to anyone and have any mode (such as /tmp at 1777); the
// directory itself must be owned by the effective user and have no group or
// other permission bits.
//
// With create, missing directories are made one at a time with mode
// [DirMode] (whatever the umask) and their parents are fsynced. Without it,
// a missing directory is an error that wraps io/fs.ErrNotExist.
func Open(path string, create bool) (*Dir, string, error) {
	if path == "" {
		return nil, "", errors.New("path is empty")
	}
	if strings.IndexByte(path, 0) >= 0 {
		return nil, "", errors.New("path contains a NUL byte")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", fmt.Errorf("make %q absolute: %w", path, err)
	}
	parent, name := filepath.Split(abs)
	if name == "" {
		return nil, "", fmt.Errorf("path %q names the root directory, not a file", abs)
	}

	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", fmt.Errorf("open directory %q: %w", "/", err)
	}
	cur := "/"
	if rel := strings.Trim(parent, "/"); rel != "" {
		for _, comp := range strings.Split(rel, "/") {
			next := filepath.Join(cur, comp)
			nfd, err := openChild(fd, comp, next, create)
			_ = unix.Close(fd)
			if err != nil {
				return nil, "", err
			}
			fd, cur = nfd, next
		}
	}

	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, "", fmt.Errorf("inspect directory %q: %w", cur, err)
	}
	if err := checkPrivate(&st, cur); err != nil {
		_ = unix.Close(fd)
		return nil, "", err
	}
	return &Dir{fd: fd, path: cur}, name, nil
}

// checkPrivate requires the directory to belong to the effective user and
// to grant nothing to group or others.
func checkPrivate(st *unix.Stat_t, path string) error {
	if euid := os.Geteuid(); int64(st.Uid) != int64(euid) {
		return fmt.Errorf("directory %q is owned by uid %d, not by the current user (uid %d); use a directory of your own", path, st.Uid, euid)
	}
	if perm := uint32(st.Mode) & 0o777; perm&0o077 != 0 {
		return fmt.Errorf("directory %q has mode %04o, want no group or other permissions (chmod 700 it)", path, perm)
	}
	return nil
}

// openChild opens the directory name inside the directory parent without
// following a symlink, creating it first when asked to and it is missing.
func openChild(parent int, name, full string, create bool) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(parent, name, flags, 0)
	created := false
	if errors.Is(err, unix.ENOENT) && create {
		switch merr := unix.Mkdirat(parent, name, DirMode); {
		case merr == nil:
			created = true
			if serr := unix.Fsync(parent); serr != nil {
				return -1, fmt.Errorf("sync directory holding %q: %w", full, serr)
			}
		case errors.Is(merr, unix.EEXIST):
			// Someone else made it first; it is checked like any other.
		default:
			return -1, fmt.Errorf("create directory %q: %w", full, merr)
		}
		fd, err = unix.Openat(parent, name, flags, 0)
	}
	if err != nil {
		return -1, describe(parent, name, full, err)
	}
	if created {
		// mkdir honours the umask; the promise is exactly DirMode.
		if err := unix.Fchmod(fd, DirMode); err != nil {
			_ = unix.Close(fd)
			return -1, fmt.Errorf("set mode of new directory %q: %w", full, err)
		}
	}
	return fd, nil
}

// describe turns a failed open of a path component into an error that says
// what the component is.
func describe(parent int, name, full string, err error) error {
	if errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("directory %q does not exist: %w", full, err)
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		var st unix.Stat_t
		if serr := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr == nil {
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return fmt.Errorf("path component %q is a symlink; use a path without symlinks", full)
			}
			return fmt.Errorf("path component %q is not a directory", full)
		}
	}
	return fmt.Errorf("open directory %q: %w", full, err)
}
