//go:build unix

package e2etest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sharedBuild links a package once per slot: a second package run with the
// same sources gets a copy of the binary go build found up to date (the
// slot's file is not replaced), and a changed source is built anew.
func TestSharedBuildReusesAnUpToDateBinary(t *testing.T) {
	module := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(module, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.test/hello\n\ngo 1.22\n")
	write("main.go", "package main\n\nfunc main() { println(\"one\") }\n")
	cache := t.TempDir()
	run := func(bin string) string {
		t.Helper()
		out, err := exec.Command(bin).CombinedOutput()
		if err != nil {
			t.Fatalf("run %s: %v\n%s", bin, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	inode := func() uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(cache, "hello"), &st); err != nil {
			t.Fatalf("the slot's binary: %v", err)
		}
		return st.Ino
	}
	first, second, third := filepath.Join(t.TempDir(), "hello"), filepath.Join(t.TempDir(), "hello"), filepath.Join(t.TempDir(), "hello")
	if err := sharedBuild(cache, "hello", module, ".", first, nil); err != nil {
		t.Fatal(err)
	}
	built := inode()
	if err := sharedBuild(cache, "hello", module, ".", second, nil); err != nil {
		t.Fatal(err)
	}
	if inode() != built {
		t.Error("the second build replaced the slot's up-to-date binary")
	}
	if run(first) != "one" || run(second) != "one" {
		t.Errorf("the copies print %q and %q, want one", run(first), run(second))
	}
	write("main.go", "package main\n\nfunc main() { println(\"two\") }\n")
	if err := sharedBuild(cache, "hello", module, ".", third, nil); err != nil {
		t.Fatal(err)
	}
	if got := run(third); got != "two" {
		t.Errorf("after a source change the binary prints %q, want two", got)
	}
	if got := run(first); got != "one" {
		t.Errorf("the first package's copy changed under it: it prints %q, want one", got)
	}
}

// A cache directory that cannot be made (a read-only or missing HOME) is
// no reason to fail a run: sharedBuild says so with errNoCache, and
// buildBinary then builds straight into the package's own directory.
func TestSharedBuildWithoutACache(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := sharedBuild(filepath.Join(file, "cache"), "slot", t.TempDir(), "./nothing", filepath.Join(t.TempDir(), "out"), nil)
	if !errors.Is(err, errNoCache) {
		t.Fatalf("sharedBuild under a file = %v, want errNoCache", err)
	}
}

// pruneSlots removes the binaries of slots nobody linked for slotMaxAge
// (other checkouts, gone or idle) and keeps the current slot, fresh slots,
// a slot whose lock another run holds, and every lock file.
func TestPruneSlots(t *testing.T) {
	cache := t.TempDir()
	old := time.Now().Add(-2 * slotMaxAge)
	slot := func(name string, mtime time.Time) string {
		t.Helper()
		p := filepath.Join(cache, name)
		if err := os.WriteFile(p, []byte("binary"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	current := slot("openprogram-race-current", old)
	stale := slot("openprogram-race-stale", old)
	fresh := slot("openprogram-race-fresh", time.Now())
	held := slot("openprogram-release-held", old)
	if err := os.Mkdir(stale+".work", 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(held+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	pruneSlots(cache, filepath.Base(current))
	for _, p := range []string{current, fresh, held, held + ".lock"} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
	for _, p := range []string{stale, stale + ".work"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (err %v), want it removed", filepath.Base(p), err)
		}
	}
}
