package files

import (
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
)

// The file tools never touch a path by name from the filesystem root.
// They resolve it once (authz.Confine, the resolution the gate checked
// with) and then work inside an os.Root opened on the working directory
// that holds it, so the kernel refuses any step out of that directory at
// the moment of the system call (openat), whatever is swapped in between.
//
// Reads go through the working directory's root, which follows symlinks
// only while they stay inside it. Writes go further: the target's
// directory is opened one component at a time and each component must be
// the very directory (same device and inode) that was a real directory a
// moment before, so no symlink swapped in after the check can redirect a
// write into .git, the state directory or anywhere else. The new content
// is staged in that directory and renamed onto the name there: a rename
// replaces a symlink, it never follows one.

// errChanged reports that a path component was swapped for something
// else (a symlink, another directory) while it was being opened.
var errChanged = errors.New("a path component changed while it was being opened")

// roots are the os.Root handles of one call, one per working directory.
type roots map[string]*os.Root

// of returns the root of t's working directory, opening it once.
func (rs roots) of(t authz.Target) (*os.Root, error) {
	if r, ok := rs[t.WorkDir]; ok {
		return r, nil
	}
	r, err := os.OpenRoot(t.WorkDir)
	if err != nil {
		return nil, err
	}
	rs[t.WorkDir] = r
	return r, nil
}

func (rs roots) close() {
	for _, r := range rs {
		_ = r.Close()
	}
}

// openDir opens the directory rel (relative to root, already resolved,
// so it holds no symlink) one component at a time, refusing every
// component that is not, at the moment it is opened, the real directory
// it was when it was looked at (errChanged). With create, missing
// components are made (0755) and returned, outermost first, relative to
// root. The caller closes the returned root.
func openDir(root *os.Root, rel string, create bool) (*os.Root, []string, error) {
	cur, err := root.OpenRoot(".")
	if err != nil {
		return nil, nil, err
	}
	var made []string
	if rel == "." || rel == "" {
		return cur, nil, nil
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for i, c := range parts {
		fi, err := cur.Lstat(c)
		if create && errors.Is(err, fs.ErrNotExist) {
			if err = cur.Mkdir(c, 0o755); err == nil {
				made = append(made, filepath.Join(parts[:i+1]...))
			}
			if err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = cur.Lstat(c)
			}
		}
		if err == nil && !fi.IsDir() {
			err = errChanged // a symlink or a file where a directory was resolved
			if fi.Mode().IsRegular() {
				err = syscall.ENOTDIR
			}
		}
		var next *os.Root
		if err == nil {
			next, err = cur.OpenRoot(c)
		}
		_ = cur.Close()
		if err != nil {
			return nil, made, err
		}
		if ni, err := next.Stat("."); err != nil || !os.SameFile(fi, ni) {
			_ = next.Close()
			return nil, made, errChanged
		}
		cur = next
	}
	return cur, made, nil
}

// errIsDir reports a write whose target is its working directory itself.
var errIsDir = syscall.EISDIR

// openParent opens, with openDir, the directory holding rel (relative to
// root) and returns it with rel's last name. rel "." (the working
// directory itself) is errIsDir.
func openParent(root *os.Root, rel string, create bool) (*os.Root, string, error) {
	if rel == "." {
		return nil, "", errIsDir
	}
	dir, _, err := openDir(root, filepath.Dir(rel), create)
	return dir, filepath.Base(rel), err
}

// readTextFile reads the regular text file name in dir for editing,
// enforcing the size limit and refusing binary files. It never follows
// a symlink: the name was resolved, so a symlink there was swapped in.
func (c *config) readTextFile(dir *os.Root, name, shown string) ([]byte, fs.FileMode, error) {
	fi, err := dir.Lstat(name)
	if err != nil {
		return nil, 0, statFailure(shown, err)
	}
	switch {
	case fi.IsDir():
		return nil, 0, tooldef.Fail(ReasonIsDir, "%s is a directory", shown)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, 0, statFailure(shown, errChanged)
	case !fi.Mode().IsRegular():
		return nil, 0, tooldef.Fail(ReasonBadPath, "%s is not a regular file", shown)
	case fi.Size() > c.maxFile:
		return nil, 0, tooldef.Fail(ReasonTooLarge, "%s is %d bytes, over the %d byte limit", shown, fi.Size(), c.maxFile)
	}
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, statFailure(shown, err)
	}
	defer f.Close()
	if oi, err := f.Stat(); err != nil || !os.SameFile(fi, oi) {
		return nil, 0, statFailure(shown, errChanged)
	}
	data, err := io.ReadAll(io.LimitReader(f, c.maxFile+1))
	if err != nil {
		return nil, 0, statFailure(shown, err)
	}
	if int64(len(data)) > c.maxFile {
		return nil, 0, tooldef.Fail(ReasonTooLarge, "%s is over the %d byte limit", shown, c.maxFile)
	}
	if isBinary(data) {
		return nil, 0, tooldef.Fail(ReasonBinary, "%s is a binary file", shown)
	}
	return data, fi.Mode().Perm(), nil
}

// reserve creates a new empty file in dir named "."+name+kind+random and
// returns it open for writing with its name.
func reserve(dir *os.Root, name, kind string) (*os.File, string, error) {
	for range 100 {
		n := "." + name + kind + strconv.FormatUint(uint64(rand.Uint32()), 10)
		f, err := dir.OpenFile(n, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, n, err
	}
	return nil, "", &fs.PathError{Op: "create", Path: name, Err: fs.ErrExist}
}

// stage writes data to a new temporary file in dir and returns its name;
// the caller renames it onto the target or removes it.
func stage(dir *os.Root, name string, data []byte, perm fs.FileMode) (string, error) {
	f, tmp, err := reserve(dir, name, ".tmp-")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = dir.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// writeAtomic replaces name in dir with data through a temporary file and
// a rename, so readers see the old or the new content, never a mix.
func writeAtomic(dir *os.Root, name string, data []byte, perm fs.FileMode) error {
	tmp, err := stage(dir, name, data, perm)
	if err != nil {
		return err
	}
	if err := dir.Rename(tmp, name); err != nil {
		_ = dir.Remove(tmp)
		return err
	}
	return nil
}
