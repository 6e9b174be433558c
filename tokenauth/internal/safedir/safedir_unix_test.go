//go:build unix

package safedir_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openprogram/openprogram/tokenauth/internal/safedir"
)

func TestOpen(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}
	d, name, err := safedir.Open(filepath.Join(root, "f"), false)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer d.Close()
	if name != "f" || d.Path() != root {
		t.Errorf("Open = %q, %q; want %q, %q", d.Path(), name, root, "f")
	}
	// The descriptor is the directory itself.
	var a, b syscall.Stat_t
	if err := syscall.Fstat(d.Fd(), &a); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(root, &b); err != nil {
		t.Fatal(err)
	}
	if a.Ino != b.Ino || a.Dev != b.Dev {
		t.Errorf("Fd refers to inode %d, want %d", a.Ino, b.Ino)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

func TestOpenCreates(t *testing.T) {
	root := t.TempDir()
	old := syscall.Umask(0o777)
	d, name, err := safedir.Open(filepath.Join(root, "a", "b", "f"), true)
	syscall.Umask(old)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	defer d.Close()
	if name != "f" || d.Path() != filepath.Join(root, "a", "b") {
		t.Errorf("Open = %q, %q", d.Path(), name)
	}
	for _, p := range []string{"a", "a/b"} {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != safedir.DirMode {
			t.Errorf("%s: mode %v, want a directory with mode 0700", p, fi.Mode())
		}
	}
}

func TestOpenErrors(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o700); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(root, "real"), 0o700))
	must(os.Symlink("real", filepath.Join(root, "link")))
	must(os.WriteFile(filepath.Join(root, "file"), nil, 0o600))
	must(os.Mkdir(filepath.Join(root, "shared"), 0o755))
	must(os.Chmod(filepath.Join(root, "shared"), 0o755))

	tests := []struct {
		path   string
		create bool
		want   string
	}{
		{"", false, "path is empty"},
		{"/", false, "names the root directory"},
		{root + "/x\x00", false, "NUL byte"},
		{root + "/link/f", false, "is a symlink"},
		{root + "/link/f", true, "is a symlink"},
		{root + "/link/a/f", true, "is a symlink"},
		{root + "/file/f", false, "is not a directory"},
		{root + "/missing/f", false, "does not exist"},
		{root + "/shared/f", false, "has mode 0755"},
	}
	for _, tt := range tests {
		d, _, err := safedir.Open(tt.path, tt.create)
		if err == nil {
			d.Close()
			t.Errorf("Open(%q, %v) = nil error, want %q", tt.path, tt.create, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%q, %v) = %v, want an error containing %q", tt.path, tt.create, err, tt.want)
		}
	}
	if _, _, err := safedir.Open(root+"/missing/f", false); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want it to wrap fs.ErrNotExist", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "real", "a")); err == nil {
		t.Errorf("Open created a directory behind a symlink")
	}
}
