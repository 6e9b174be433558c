//go:build unix

package files_test

import (
	"io/fs"
	"os"
	"testing"
)

// fsRoot is the root of the file system, outside every working directory.
const fsRoot = "/"

// unixPaths reports whether the tests' Unix paths (/proc, /etc) mean
// something here.
const unixPaths = true

// wantPerm fails unless the file at p has the mode bits perm.
func wantPerm(t *testing.T, p string, perm fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != perm {
		t.Errorf("%s mode = %v, want %v", p, got, perm)
	}
}

// needLinks skips nothing on Unix: symlinks are made as asked.
func needLinks(*testing.T) {}
