//go:build windows

package clients

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// TestReplaceGivesUp: a client that never lets go gets privatefile's
// bounded retry (its tests count the tries), then an error that says what
// to do; the file is as it was and no
// temporary file is left beside it.
func TestReplaceGivesUp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A client holding its file open: os.Open shares read and write
	// access, not delete, so Windows refuses a rename over the file.
	held, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	err = replaceFile(path, []byte("new"))
	if !errors.Is(err, privatefile.ErrInUse) || !strings.Contains(err.Error(), "quit it") {
		t.Fatalf("replaceFile on a held file = %v, want the in-use error saying to quit the client", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Errorf("file = %q, want it unchanged", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("dir holds %d entries, want the file alone", len(entries))
	}
}

// TestReplaceRefusesForGood: a client file that cannot be replaced for
// good (here a directory stands at its path) is not taken for one a client
// holds: replaceFile fails on the first try with an error that says what
// to do, not to quit the client.
func TestReplaceRefusesForGood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	err := replaceFile(path, []byte("new"))
	if err == nil || errors.Is(err, privatefile.ErrInUse) || strings.Contains(err.Error(), "quit it") ||
		!strings.Contains(err.Error(), "is a directory") {
		t.Errorf("replaceFile over a directory = %v; want an error saying it is a directory, not to quit the client", err)
	}
}
