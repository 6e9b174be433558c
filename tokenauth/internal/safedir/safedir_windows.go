//go:build windows

package safedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// Dir is a directory that passed the checks of [Open]. It holds every
// directory of its path open, from the volume root down, without sharing
// delete access: while it is open none of them can be renamed, removed or
// replaced by a junction, so a path below [Dir.Path] names what was
// checked (the Windows counterpart of the Unix walk by descriptors).
type Dir struct {
	path    string
	handles []syscall.Handle
}

// Path returns the absolute, cleaned path the directory was opened by.
func (d *Dir) Path() string { return d.path }

// Close releases the directories of the path. Calling it again does
// nothing.
func (d *Dir) Close() error {
	var first error
	for _, h := range d.handles {
		if err := syscall.CloseHandle(h); err != nil && first == nil {
			first = err
		}
	}
	d.handles = nil
	return first
}

// Open makes path absolute and clean, then checks the directory that holds
// its last element and returns it with that element's name.
//
// Every component below the volume root down to that directory must be a
// real directory: a symlink, junction or other reparse point anywhere is an
// error. Each is opened itself (never what a reparse point leads to),
// checked by its handle, and held open until [Dir.Close], so nobody can
// swap it after the check. The directory itself must be owned by the
// current user and its DACL must let nobody but that user and SYSTEM in.
//
// With create, missing directories are made one at a time with an
// owner-only DACL. Without it, a missing directory is an error that wraps
// io/fs.ErrNotExist.
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
	vol := filepath.VolumeName(abs)
	cur := vol + `\`
	d := &Dir{}
	root, err := holdDir(cur)
	if err != nil {
		return nil, "", fmt.Errorf("open directory %q: %w", cur, err)
	}
	d.handles = append(d.handles, root)
	if rel := strings.Trim(parent[len(vol):], `\`); rel != "" {
		for _, comp := range strings.Split(rel, `\`) {
			cur = filepath.Join(cur, comp)
			h, err := openChild(cur, create)
			if err != nil {
				d.Close()
				return nil, "", err
			}
			d.handles = append(d.handles, h)
		}
	}
	f, err := os.Open(cur)
	if err != nil {
		d.Close()
		return nil, "", fmt.Errorf("open directory %q: %w", cur, err)
	}
	defer f.Close()
	if err := privatefile.CheckPrivate(f); err != nil {
		d.Close()
		return nil, "", fmt.Errorf("directory %q is open to others (%w); use a directory of your own, or run %s", cur, err, privatefile.RestrictCommand(cur))
	}
	d.path = cur
	return d, name, nil
}

// openChild opens and holds the directory full (its parent is held),
// creating it first when asked to and it is missing, and requires it to be
// a real directory.
func openChild(full string, create bool) (syscall.Handle, error) {
	h, err := holdDir(full)
	if errors.Is(err, fs.ErrNotExist) && create {
		if merr := privatefile.Mkdir(full); merr != nil && !errors.Is(merr, fs.ErrExist) {
			return 0, fmt.Errorf("create directory %q: %w", full, merr)
		}
		h, err = holdDir(full)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("directory %q does not exist: %w", full, err)
	}
	if err != nil {
		return 0, fmt.Errorf("open directory %q: %w", full, err)
	}
	var info syscall.ByHandleFileInformation
	if err := syscall.GetFileInformationByHandle(h, &info); err != nil {
		syscall.CloseHandle(h)
		return 0, fmt.Errorf("inspect directory %q: %w", full, err)
	}
	switch {
	case info.FileAttributes&syscall.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		syscall.CloseHandle(h)
		return 0, fmt.Errorf("path component %q is a symlink; use a path without symlinks", full)
	case info.FileAttributes&syscall.FILE_ATTRIBUTE_DIRECTORY == 0:
		syscall.CloseHandle(h)
		return 0, fmt.Errorf("path component %q is not a directory", full)
	}
	return h, nil
}

// holdDir opens the entry at full itself, a reparse point included (it is
// never followed), sharing read and write but not delete: while the handle
// is open the entry cannot be renamed or removed.
func holdDir(full string) (syscall.Handle, error) {
	p, err := syscall.UTF16PtrFromString(full)
	if err != nil {
		return 0, err
	}
	const fileReadAttributes = 0x80 // FILE_READ_ATTRIBUTES
	h, err := syscall.CreateFile(p, fileReadAttributes,
		syscall.FILE_SHARE_READ|syscall.FILE_SHARE_WRITE, nil, syscall.OPEN_EXISTING,
		syscall.FILE_FLAG_BACKUP_SEMANTICS|syscall.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if errors.Is(err, syscall.ERROR_FILE_NOT_FOUND) || errors.Is(err, syscall.ERROR_PATH_NOT_FOUND) {
		return 0, &fs.PathError{Op: "open", Path: full, Err: fs.ErrNotExist}
	}
	if err != nil {
		return 0, err
	}
	return h, nil
}
