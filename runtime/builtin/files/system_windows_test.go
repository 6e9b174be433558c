//go:build windows

package files_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/internal/wine"
)

// fsRoot is the root of the temporary directory's drive, outside every
// working directory.
var fsRoot = filepath.VolumeName(os.TempDir()) + `\`

// unixPaths reports whether the tests' Unix paths (/proc, /etc) mean
// something here: not on Windows (TestWindowsPathTricks has its own).
const unixPaths = false

// wantPerm fails unless the file at p is writable exactly when perm lets
// its owner write: Windows keeps a read-only flag, no other mode bits.
func wantPerm(t *testing.T, p string, perm fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got&0o200 != perm&0o200 {
		t.Errorf("%s mode = %v, want the owner's write bit of %v", p, got, perm)
	}
}

// needLinks skips the test under Wine, whose CreateSymbolicLink reports
// success and creates nothing.
func needLinks(t *testing.T) {
	t.Helper()
	if wine.Detected() {
		t.Skip("Wine makes no symlinks (its CreateSymbolicLink reports success and creates nothing); the windows-latest job runs this")
	}
}
