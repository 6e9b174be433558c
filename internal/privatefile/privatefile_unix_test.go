//go:build unix

package privatefile_test

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// withUmask runs the test under umask mask (the process's: no test here is
// parallel).
func withUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func content(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// umasks are a permissive one (open(2) keeps 0600 as it is) and one that
// would take the owner's write bit away.
var umasks = []int{0, 0o022, 0o277}

func TestReplaceIsOwnerOnly(t *testing.T) {
	for _, mask := range umasks {
		withUmask(t, mask)
		path := filepath.Join(t.TempDir(), "f.json")
		if err := os.WriteFile(path, []byte("old"), 0o666); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := privatefile.Replace(path, []byte("new")); err != nil {
			t.Fatalf("umask %04o: Replace: %v", mask, err)
		}
		if m := mode(t, path); m != privatefile.Mode {
			t.Errorf("umask %04o: Replace over a 0666 file made mode %04o, want 0600", mask, m)
		}
		if got := content(t, path); got != "new" {
			t.Errorf("umask %04o: content %q, want new", mask, got)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp")); len(left) != 0 {
			t.Errorf("umask %04o: temporary files left: %v", mask, left)
		}
	}
}

func TestReplaceFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	if err := os.Mkdir(path, 0o700); err != nil { // rename(2) of a file over a directory fails
		t.Fatal(err)
	}
	if err := privatefile.Replace(path, []byte("new")); err == nil {
		t.Fatal("Replace over a directory succeeded")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestCreateNewIsOwnerOnly(t *testing.T) {
	for _, mask := range umasks {
		withUmask(t, mask)
		path := filepath.Join(t.TempDir(), "f.bak")
		if err := privatefile.CreateNew(path, []byte("secret")); err != nil {
			t.Fatalf("umask %04o: CreateNew: %v", mask, err)
		}
		if m := mode(t, path); m != privatefile.Mode {
			t.Errorf("umask %04o: CreateNew made mode %04o, want 0600", mask, m)
		}
		if got := content(t, path); got != "secret" {
			t.Errorf("umask %04o: content %q, want secret", mask, got)
		}
	}
}

func TestCreateNewNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.bak")
	if err := os.WriteFile(path, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := privatefile.CreateNew(path, []byte("ours")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateNew over a file = %v, want fs.ErrExist", err)
	}
	if got := content(t, path); got != "theirs" {
		t.Errorf("CreateNew changed an existing file to %q", got)
	}
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link.bak")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := privatefile.CreateNew(link, []byte("ours")); err == nil {
		t.Error("CreateNew through a dangling symlink succeeded")
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CreateNew created the symlink's target: %v", err)
	}
}

func TestOpenAppend(t *testing.T) {
	withUmask(t, 0)
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	f, err := privatefile.OpenAppend(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if m := mode(t, path); m != privatefile.Mode {
		t.Errorf("new log: mode %04o, want 0600", m)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := privatefile.OpenAppend(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("OpenAppend of a 0644 log = %v, want a refusal saying chmod 600", err)
	}
	if _, err := privatefile.OpenAppend(dir); err == nil {
		t.Error("OpenAppend of a directory succeeded")
	}
}

func TestRestrict(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	if err := os.WriteFile(path, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if was, changed, err := privatefile.Restrict(path); err != nil || !changed || was != 0o644 {
		t.Errorf("Restrict(0644 file) = %04o, %v, %v; want 0644, true, nil", was, changed, err)
	}
	if m := mode(t, path); m != privatefile.Mode {
		t.Errorf("after Restrict: mode %04o, want 0600", m)
	}
	if was, changed, err := privatefile.Restrict(path); err != nil || changed || was != 0o600 {
		t.Errorf("Restrict(0600 file) = %04o, %v, %v; want 0600, false, nil", was, changed, err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := privatefile.Restrict(link); err == nil {
		t.Error("Restrict followed a symlink")
	}
	if m := mode(t, path); m != 0o644 {
		t.Errorf("Restrict through a symlink changed its target to %04o", m)
	}
}

// The command RestrictCommand prints, pasted into sh, makes owner-only the
// file it names, whatever the path holds: a space, $, a backtick, a quote,
// a semicolon.
func TestRestrictCommandPastesIntoSh(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a b$HOME`x`'q';y")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "serve log")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	line := privatefile.RestrictCommand(path)
	if out, err := exec.Command("sh", "-c", line).CombinedOutput(); err != nil {
		t.Fatalf("sh -c %s: %v: %s", line, err, out)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("after sh -c %s the file has mode %04o, want 0600", line, perm)
	}
}
