//go:build unix

package slots

import (
	"os"
	"os/exec"
	"testing"
)

// On Unix a child that inherits the slot holds it until it exits, after
// the parent closed its copy.
func TestChildHoldsAnInheritedSlot(t *testing.T) {
	dir := t.TempDir()
	b, err := Acquire(t.Context(), dir, "c", 2)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("cat") // lives until its stdin closes
	cmd.ExtraFiles = []*os.File{b}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if n, _ := Held(dir, "c", 2); n != 1 {
		t.Errorf("Held while the child lives = %d, want 1", n)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if n, _ := Held(dir, "c", 2); n != 0 {
		t.Errorf("Held once the child exited = %d, want 0", n)
	}
}
