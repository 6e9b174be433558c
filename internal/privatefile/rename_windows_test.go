//go:build windows

package privatefile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/internal/shell"
	"github.com/openprogram/openprogram/internal/wine"
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

// A program that holds the file open without sharing delete access (as an
// MCP client may hold its configuration file) is waited for as well.
func TestReplaceWaitsForAHandleWithoutDeleteSharing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := privatefile.CreateNew(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	// os.Open shares read and write access, not delete.
	held, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	retried := 0
	privatefile.SetRenameRetried(t, func(attempt int) {
		retried = attempt
		if attempt == 2 {
			held.Close()
		}
	})
	if err := privatefile.Replace(path, []byte("new")); err != nil {
		t.Fatalf("Replace after the client let go: %v", err)
	}
	if retried != 2 {
		t.Errorf("Replace retried %d times, want 2 (the file was held for two attempts)", retried)
	}
	if got, _ := os.ReadFile(path); string(got) != "new" {
		t.Errorf("file = %q, want the new content", got)
	}
}

// A file held open for good is not replaced: Replace gives up, the error
// says the file is in use (ErrInUse), and the old content stays.
func TestReplaceGivesUpOnAFileHeldOpen(t *testing.T) {
	path, held := heldFile(t, "audit_anchor")
	attempts := 0
	privatefile.SetRenameRetried(t, func(int) { attempts++ })
	err := privatefile.Replace(path, []byte("new"))
	if !errors.Is(err, privatefile.ErrInUse) {
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

// A target that cannot be replaced for good is not retried as if it were
// in use: Replace fails on its first try, says what to do, and leaves the
// target as it was. A directory is one under Wine too; a read-only file is
// one on Windows (Wine renames over it). The fix it prints is pasted into
// PowerShell: the path, which holds a $ here, is one literal word.
func TestReplaceRefusesForGoodAtOnce(t *testing.T) {
	for _, tt := range []struct {
		name string
		hint func(path string) string
		make func(t *testing.T, path string) error
	}{
		{"directory", func(string) string { return "is a directory" }, func(_ *testing.T, path string) error { return os.Mkdir(path, 0o700) }},
		{"read-only", func(path string) string { return "attrib -r " + shell.PowerShell.Quote(path) + " " }, func(t *testing.T, path string) error {
			if wine.Detected() {
				t.Skip("Wine renames over a read-only file; the windows-latest job runs this")
			}
			if err := privatefile.CreateNew(path, []byte("old")); err != nil {
				return err
			}
			t.Cleanup(func() { os.Chmod(path, 0o600) })
			return os.Chmod(path, 0o400) // FILE_ATTRIBUTE_READONLY
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "a $HOME")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "mcp.json")
			if err := tt.make(t, path); err != nil {
				t.Fatal(err)
			}
			retries := 0
			privatefile.SetRenameRetried(t, func(int) { retries++ })
			start := time.Now()
			err := privatefile.Replace(path, []byte("new"))
			t.Logf("failed after %v: %v", time.Since(start), err)
			if err == nil {
				t.Fatal("Replace succeeded")
			}
			if retries != 0 {
				t.Errorf("Replace retried %d times; want it refused on the first try", retries)
			}
			if hint := tt.hint(path); !strings.Contains(err.Error(), hint) {
				t.Errorf("error %q does not say %q", err, hint)
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("a failed Replace left %d entries, want only the target", len(entries))
			}
		})
	}
}
