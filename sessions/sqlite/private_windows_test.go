//go:build windows

package sqlite

import (
	"os"
	"testing"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// oddFileName is a file name that needs escaping in a sqlite: URL (no "?":
// Windows refuses it in a name).
const oddFileName = "with space and#hash%.db"

// wantOwnerOnly fails unless the file at path is owner-only: a DACL for
// the user and SYSTEM alone (privatefile.CheckPrivate; it has nothing to
// check under Wine, which keeps no DACLs: the windows-latest job checks).
func wantOwnerOnly(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := privatefile.CheckPrivate(f); err != nil {
		t.Errorf("%s is not owner-only: %v", path, err)
	}
}
