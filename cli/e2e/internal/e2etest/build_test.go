package e2etest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
