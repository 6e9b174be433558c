// Package privatefile is how the openprogram command writes a file that
// may hold a secret: config.json, an MCP client's configuration file (Claude
// Desktop's holds the MCP token and the model key), the backup made before
// it is changed, and the logs in the state directory.
//
// Every file it creates has mode [Mode], 0600, whatever the umask and
// whatever mode the file it replaces or copies had: no caller passes a mode.
// (The token file and owner.json have procedures of their own in tokenauth
// and authz, to the same rule.)
package privatefile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Mode is the mode of every file this package creates: read and write for
// the owner, nothing for anyone else.
const Mode fs.FileMode = 0o600

// Replace replaces path with data, mode [Mode]: a temporary file in the
// same directory, fsync, rename over path, fsync the directory. On any
// failure the old file is left as it was.
func Replace(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*.tmp")
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
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// CreateNew writes data to a new file at path, mode [Mode], and fsyncs it.
// It fails when anything (a symlink included) is at path already; whatever
// else fails, nothing is left behind.
func CreateNew(path string, data []byte) (err error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, Mode)
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

// fill sets f's mode to Mode (what open(2) made of it depends on the
// umask), writes data and fsyncs.
func fill(f *os.File, data []byte) error {
	if err := f.Chmod(Mode); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Sync()
}

// OpenAppend opens the log file at path to append to, creating it with
// mode [Mode]. It refuses what is not a regular file, a file swapped while
// it was opened, and one open to others (a log may hold what a secret
// leaked into; the error says how to close it).
func OpenAppend(path string) (*os.File, error) {
	before, lerr := os.Lstat(path)
	if lerr == nil && !before.Mode().IsRegular() {
		return nil, fmt.Errorf("the log file %s is not a regular file; remove it", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, Mode)
	if err != nil {
		return nil, fmt.Errorf("open the log file %s: %w", path, err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil || (lerr == nil && !os.SameFile(before, fi)):
		f.Close()
		return nil, fmt.Errorf("the log file %s changed while it was opened; try again", path)
	case fi.Mode().Perm()&0o077 != 0:
		f.Close()
		return nil, fmt.Errorf("the log file %s is open to others; run: chmod 600 %s", path, path)
	}
	return f, nil
}

// Restrict makes the regular file at path mode [Mode] when it grants
// anything to group or others (a file this program wrote, saved again by
// another program under its own umask). It returns the mode the file had,
// and whether it changed it. A symlink at path is refused, not followed.
func Restrict(path string) (was fs.FileMode, changed bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
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
