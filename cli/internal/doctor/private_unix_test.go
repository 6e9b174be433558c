//go:build unix

package doctor

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The fix doctor gives for a state directory open to others, pasted into
// sh, makes that directory owner-only, whatever its path holds.
func TestDirFixPastesIntoSh(t *testing.T) {
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
	_, fix := dirProblem(dir, fi)
	if fix == "" {
		t.Fatal("a state directory of mode 0755 has no fix")
	}
	if out, err := exec.Command("sh", "-c", fix).CombinedOutput(); err != nil {
		t.Fatalf("sh -c %s: %v: %s", fix, err, out)
	}
	if fi, err = os.Lstat(dir); err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("after sh -c %s the directory has mode %04o, want 0700", fix, perm)
	}
}
