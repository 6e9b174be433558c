//go:build windows

package safedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/internal/wine"
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
		if wine.Detected() {
			t.Log("not checking the hold: Wine lets a directory open without FILE_SHARE_DELETE be renamed (the windows-latest job checks it)")
			break
		}
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
