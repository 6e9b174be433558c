//go:build unix

package sqlite

import (
	"os"
	"testing"
)

// oddFileName is a file name that needs escaping in a sqlite: URL.
const oddFileName = "with space?and#hash%.db"

// wantOwnerOnly fails unless the file at path is owner-only: mode 0600.
func wantOwnerOnly(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, got)
	}
}
