// Package privatefile is the one owner-only file rule of the repository:
// how a file that may hold a secret is created, opened and checked. The
// openprogram command writes config.json, an MCP client's configuration file
// (Claude Desktop's holds the MCP token and the model key), the backup made
// before it is changed, and the logs in the state directory with it; authz
// (owner.json) and tokenauth (the token, audit_key, audit_anchor) create and
// check their files with [Create], [OpenNoFollow] and [CheckPrivate].
//
// On Unix every file it creates has mode [Mode], 0600, whatever the umask and
// whatever mode the file it replaces or copies had: no caller passes a mode.
// On Windows it has a protected DACL that grants the current user and
// SYSTEM, nobody else, and inherits nothing. Nothing is ever created through
// a symlink or another reparse point.
package privatefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Mode is the Unix mode of every file this package creates: read and write
// for the owner, nothing for anyone else. (On Windows the owner-only DACL
// stands for it.)
const Mode fs.FileMode = 0o600

// ErrInUse is wrapped by the error of [RenameOver], and so of [Replace],
// that gave up because another program held the target open all the while
// (Windows refuses to rename over an open file; never on Unix).
var ErrInUse = errors.New("another program holds the file open; close it and run this again")

// Replace replaces path with data, owner-only: a temporary file in the same
// directory, fsync, rename over path, fsync the directory. On any failure
// the old file is left as it was.
func Replace(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := createTemp(dir, "."+filepath.Base(path)+"-", ".tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = fill(tmp, data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = RenameOver(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// CreateNew writes data to a new owner-only file at path and fsyncs it.
// It fails when anything (a symlink included) is at path already; whatever
// else fails, nothing is left behind.
func CreateNew(path string, data []byte) (err error) {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	return fill(f, data)
}

// fill writes data and fsyncs.
func fill(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// OpenAppend opens the log file at path to append to, creating it
// owner-only. It refuses what is not a regular file, a file swapped while
// it was opened, and one open to others (a log may hold what a secret
// leaked into; the error says how to close it).
func OpenAppend(path string) (*os.File, error) {
	before, lerr := os.Lstat(path)
	if lerr == nil && !before.Mode().IsRegular() {
		return nil, fmt.Errorf("the log file %s is not a regular file; remove it", path)
	}
	f, err := openAppend(path)
	if err != nil {
		return nil, fmt.Errorf("open the log file %s: %w", path, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil || (lerr == nil && !os.SameFile(before, fi)):
		f.Close()
		return nil, fmt.Errorf("the log file %s changed while it was opened; try again", path)
	case CheckPrivate(f) != nil:
		f.Close()
		return nil, fmt.Errorf("the log file %s is open to others; run: %s", path, RestrictCommand(path))
	}
	return f, nil
}
