//go:build windows

package privatefile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// Windows refuses to rename over a file another handle holds open, even
// one that shares delete access (a reader of the pins or the anchor in
// another process): Replace tries again while the file is in use.
func TestReplaceWaitsForAReader(t *testing.T) {
	path, held := heldFile(t, "audit_pins")
	retried := 0
	privatefile.SetRenameRetried(t, func(int) {
		retried++
		held.Close() // the reader is done
	})
	if err := privatefile.Replace(path, []byte("new")); err != nil {
		t.Fatalf("Replace while a reader held the file: %v", err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "new" {
		t.Fatalf("after Replace: %q, %v; want \"new\"", got, err)
	}
	t.Logf("retried %d times", retried)
}

// A file held open for good is not replaced: Replace gives up, the error
// says the file is in use (InUse), and the old content stays.
func TestReplaceGivesUpOnAFileHeldOpen(t *testing.T) {
	path, held := heldFile(t, "audit_anchor")
	attempts := 0
	privatefile.SetRenameRetried(t, func(int) { attempts++ })
	err := privatefile.Replace(path, []byte("new"))
	if err == nil || !privatefile.InUse(err) {
		t.Fatalf("Replace of a file held open = %v; want an in-use error", err)
	}
	if attempts == 0 {
		t.Error("Replace never tried again")
	}
	held.Close()
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("after a failed Replace the file holds %q, want \"old\"", got)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("a failed Replace left %d entries, want only the file", len(entries))
	}
}

// heldFile creates the owner-only file name holding "old" in a new
// directory and opens it as a reader would (sharing delete access); the
// handle is closed when the test ends, if the test has not closed it.
func heldFile(t *testing.T, name string) (string, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := privatefile.CreateNew(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	held, err := privatefile.OpenNoFollow(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })
	return path, held
}
