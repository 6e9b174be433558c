//go:build unix

package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The fix a state directory open to others is refused with, pasted into
// sh, makes that directory owner-only, whatever its path holds.
func TestStateDirFixPastesIntoSh(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a b$HOME`x`;y")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		t.Fatal(err)
	}
	refusal := checkStateDirPrivate(dir, fi)
	if refusal == nil {
		t.Fatal("a state directory of mode 0755 was not refused")
	}
	_, line, ok := strings.Cut(refusal.Error(), "run: ")
	if !ok {
		t.Fatalf("the refusal %q names no command to run", refusal)
	}
	if out, err := exec.Command("sh", "-c", line).CombinedOutput(); err != nil {
		t.Fatalf("sh -c %s: %v: %s", line, err, out)
	}
	if fi, err = os.Lstat(dir); err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("after sh -c %s the directory has mode %04o, want 0700", line, perm)
	}
}
