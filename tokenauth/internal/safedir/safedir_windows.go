//go:build windows

package safedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// Dir is a directory that passed the checks of [Open]. It holds every
// directory of its path open, from the volume root down, each opened
// relative to the handle of the one above it (the Windows counterpart of
// the Unix walk by descriptors) and without sharing delete access: while it
// is open none of them can be renamed, removed or replaced by a junction,
// so a path below [Dir.Path] names what was checked.
type Dir struct {
	path    string
	handles []windows.Handle
}

// testHookAfterStep, when set (by tests), is called with the path of each
// directory below the root once the walk holds it.
var testHookAfterStep func(full string)

// Path returns the absolute, cleaned path the directory was opened by.
func (d *Dir) Path() string { return d.path }

// Close releases the directories of the path. Calling it again does
// nothing.
func (d *Dir) Close() error {
	var first error
	for _, h := range d.handles {
		if err := windows.CloseHandle(h); err != nil && first == nil {
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
// error. Each is opened relative to the handle of its parent (NtCreateFile
// with a root directory), as itself (never what a reparse point leads to),
// checked by its handle, and held open until [Dir.Close], so nobody can
// swap it after the check; at the end the path must still name the
// directory held. The directory itself must be owned by the current user
// and its DACL must let nobody but that user and SYSTEM in.
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
	root, err := holdRoot(cur)
	if err != nil {
		return nil, "", fmt.Errorf("open directory %q: %w", cur, err)
	}
	d.handles = append(d.handles, root)
	if rel := strings.Trim(parent[len(vol):], `\`); rel != "" {
		for _, comp := range strings.Split(rel, `\`) {
			cur = filepath.Join(cur, comp)
			h, err := openChild(d.handles[len(d.handles)-1], comp, cur, create)
			if err != nil {
				d.Close()
				return nil, "", err
			}
			d.handles = append(d.handles, h)
			if testHookAfterStep != nil {
				testHookAfterStep(cur)
			}
		}
	}
	held := d.handles[len(d.handles)-1]
	if err := samePath(held, cur); err != nil {
		d.Close()
		return nil, "", err
	}
	if err := checkPrivate(held); err != nil {
		d.Close()
		return nil, "", fmt.Errorf("directory %q is open to others (%w); use a directory of your own, or run %s", cur, err, privatefile.RestrictCommand(cur))
	}
	d.path = cur
	return d, name, nil
}

// checkPrivate is [privatefile.CheckPrivate] of the directory h holds (on
// a duplicate of the handle, which the check closes).
func checkPrivate(h windows.Handle) error {
	var dup windows.Handle
	me := windows.CurrentProcess()
	if err := windows.DuplicateHandle(me, h, me, &dup, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		return fmt.Errorf("duplicate the handle: %w", err)
	}
	f := os.NewFile(uintptr(dup), "")
	defer f.Close()
	return privatefile.CheckPrivate(f)
}

// samePath checks that full still names the directory h holds: the walk
// opened each directory by its parent's handle, and a directory renamed
// away during the walk (which the handles held stop on Windows) would
// leave the path naming another one.
func samePath(h windows.Handle, full string) error {
	byPath, err := holdRoot(full)
	if err != nil {
		return fmt.Errorf("open directory %q: %w", full, err)
	}
	defer windows.CloseHandle(byPath)
	a, err := fileID(h)
	if err == nil {
		var b [3]uint32
		if b, err = fileID(byPath); err == nil && a != b {
			return fmt.Errorf("directory %q changed while it was opened; try again", full)
		}
	}
	if err != nil {
		return fmt.Errorf("inspect directory %q: %w", full, err)
	}
	return nil
}

// fileID identifies the file or directory h is open on.
func fileID(h windows.Handle) ([3]uint32, error) {
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		return [3]uint32{}, err
	}
	return [3]uint32{info.VolumeSerialNumber, info.FileIndexHigh, info.FileIndexLow}, nil
}

// dirAccess is what the walk holds a directory with: enough to open its
// children by handle, read its attributes and its security descriptor.
const dirAccess = windows.FILE_LIST_DIRECTORY | windows.FILE_TRAVERSE | windows.FILE_READ_ATTRIBUTES |
	windows.READ_CONTROL | windows.SYNCHRONIZE

// openChild opens and holds the directory name in the directory parent
// holds (full is its path, for errors), creating it first when asked to
// and it is missing, and requires it to be a real directory.
func openChild(parent windows.Handle, name, full string, create bool) (windows.Handle, error) {
	h, err := openAt(parent, name)
	if errors.Is(err, fs.ErrNotExist) && create {
		if merr := privatefile.Mkdir(full); merr != nil && !errors.Is(merr, fs.ErrExist) {
			return 0, fmt.Errorf("create directory %q: %w", full, merr)
		}
		h, err = openAt(parent, name)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("directory %q does not exist: %w", full, err)
	case errors.Is(err, windows.STATUS_NOT_A_DIRECTORY):
		return 0, fmt.Errorf("path component %q is not a directory", full)
	case err != nil:
		return 0, fmt.Errorf("open directory %q: %w", full, err)
	}
	var info windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(h, &info); err != nil {
		windows.CloseHandle(h)
		return 0, fmt.Errorf("inspect directory %q: %w", full, err)
	}
	switch {
	case info.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0:
		windows.CloseHandle(h)
		return 0, fmt.Errorf("path component %q is a symlink; use a path without symlinks", full)
	case info.FileAttributes&windows.FILE_ATTRIBUTE_DIRECTORY == 0:
		windows.CloseHandle(h)
		return 0, fmt.Errorf("path component %q is not a directory", full)
	}
	return h, nil
}

// openAt opens the directory entry name in the directory parent holds,
// relative to that handle (never by a path another program could swap a
// directory into), as itself even when it is a reparse point, sharing read
// and write but not delete: while the handle is open the entry cannot be
// renamed or removed. A missing entry is an error wrapping
// io/fs.ErrNotExist; a file that is no directory, STATUS_NOT_A_DIRECTORY.
func openAt(parent windows.Handle, name string) (windows.Handle, error) {
	if name == "." || name == ".." || strings.ContainsAny(name, `\/`) {
		return 0, fmt.Errorf("path component %q is not a plain name", name)
	}
	uname, err := windows.NewNTUnicodeString(name)
	if err != nil {
		return 0, err
	}
	oa := windows.OBJECT_ATTRIBUTES{RootDirectory: parent, ObjectName: uname, Attributes: windows.OBJ_CASE_INSENSITIVE}
	oa.Length = uint32(unsafe.Sizeof(oa))
	var h windows.Handle
	var iosb windows.IO_STATUS_BLOCK
	err = windows.NtCreateFile(&h, dirAccess, &oa, &iosb, nil, 0,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, windows.FILE_OPEN,
		windows.FILE_DIRECTORY_FILE|windows.FILE_OPEN_REPARSE_POINT|windows.FILE_SYNCHRONOUS_IO_NONALERT, 0, 0)
	switch {
	case errors.Is(err, windows.STATUS_OBJECT_NAME_NOT_FOUND), errors.Is(err, windows.STATUS_OBJECT_PATH_NOT_FOUND):
		return 0, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	case err != nil:
		return 0, err
	}
	return h, nil
}

// holdRoot opens the directory at full by its path, the entry itself
// (never followed when it is a reparse point), sharing read and write but
// not delete: the volume root the walk starts from, and the check that the
// path still names what the walk holds.
func holdRoot(full string) (windows.Handle, error) {
	p, err := windows.UTF16PtrFromString(full)
	if err != nil {
		return 0, err
	}
	h, err := windows.CreateFile(p, dirAccess,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE, nil, windows.OPEN_EXISTING,
		windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND) {
		return 0, &fs.PathError{Op: "open", Path: full, Err: fs.ErrNotExist}
	}
	if err != nil {
		return 0, err
	}
	return h, nil
}
