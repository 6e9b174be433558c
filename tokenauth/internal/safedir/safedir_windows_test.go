//go:build windows

package safedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestOpenHoldsThePath: while a Dir is open no directory of its path can
// be renamed away (and so none replaced by a junction); once it is closed,
// they can.
func TestOpenHoldsThePath(t *testing.T) {
	base := t.TempDir()
	d, name, err := Open(filepath.Join(base, "a", "b", "token"), true)
	if err != nil {
		t.Fatal(err)
	}
	if name != "token" || !strings.EqualFold(d.Path(), filepath.Join(base, "a", "b")) {
		t.Errorf("Open = %q, %q; want %s, token", d.Path(), name, filepath.Join(base, "a", "b"))
	}
	for _, dir := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b")} {
		if err := os.Rename(dir, dir+"-moved"); err == nil {
			t.Errorf("%s was renamed while the Dir was open", dir)
			_ = os.Rename(dir+"-moved", dir)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := os.Rename(filepath.Join(base, "a"), filepath.Join(base, "c")); err != nil {
		t.Errorf("rename after Close = %v", err)
	}
}

// TestOpenRefuses: a file as a directory, and a missing directory without
// create (an error wrapping fs.ErrNotExist).
func TestOpenRefuses(t *testing.T) {
	base := t.TempDir()
	if err := os.WriteFile(filepath.Join(base, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if d, _, err := Open(filepath.Join(base, "f", "token"), true); err == nil || !strings.Contains(err.Error(), "not a directory") {
		if d != nil {
			d.Close()
		}
		t.Errorf("Open(file/token) = %v, want not a directory", err)
	}
	if d, _, err := Open(filepath.Join(base, "missing", "token"), false); !errors.Is(err, fs.ErrNotExist) {
		if d != nil {
			d.Close()
		}
		t.Errorf("Open(missing/token) = %v, want fs.ErrNotExist", err)
	}
}

// idOf is what identifies the directory a handle is open on.
func idOf(t *testing.T, h windows.Handle) [3]uint32 {
	t.Helper()
	id, err := fileID(h)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// pathID is fileID of the directory at path.
func pathID(t *testing.T, path string) [3]uint32 {
	t.Helper()
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := windows.CreateFile(p, windows.FILE_READ_ATTRIBUTES, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	return idOf(t, h)
}

// TestOpenNotRedirectedDuringTheWalk: a directory of the path that is
// swapped for another one (renamed away, a new one with the same name
// made in its place) after the walk opened it does not redirect the walk:
// the next step opens the child of the directory held, not of the one the
// path now names, and Open does not hand back a Dir whose path names
// something else than what it holds. (Windows refuses the rename while the
// walk holds the directory; Wine allows it, which shows the walk itself.)
func TestOpenNotRedirectedDuringTheWalk(t *testing.T) {
	base := t.TempDir()
	a := filepath.Join(base, "a")
	if err := os.MkdirAll(filepath.Join(a, "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	original := pathID(t, filepath.Join(a, "b"))
	swapped := false
	testHookAfterStep = func(full string) {
		if full != a {
			return
		}
		if err := os.Rename(a, a+"-moved"); err != nil {
			t.Logf("the held directory could not be renamed (%v): nothing was swapped", err)
			return
		}
		if err := os.MkdirAll(filepath.Join(a, "b"), 0o700); err != nil {
			t.Fatal(err)
		}
		swapped = true
	}
	defer func() { testHookAfterStep = nil }()
	d, _, err := Open(filepath.Join(a, "b", "token"), false)
	if !swapped {
		t.Log("the walk was not disturbed (Windows holds the directories it walked)")
	}
	if err != nil {
		if !swapped {
			t.Fatalf("Open = %v", err)
		}
		t.Logf("Open refused the swapped path: %v", err)
		return
	}
	defer d.Close()
	held := idOf(t, d.handles[len(d.handles)-1])
	if held != original {
		t.Errorf("the Dir holds another directory than the one the walk started in: the swap redirected the walk")
	}
	if named := pathID(t, d.Path()); named != held {
		t.Errorf("Dir.Path() %s names another directory than the one the Dir holds", d.Path())
	}
}
