//go:build unix

package authz_test

import (
	"os"
	"testing"
)

// checkOwnerOnly requires path (a file, or with dir a directory) to be
// mode 0600 (0700 for a directory).
func checkOwnerOnly(t *testing.T, path string, dir bool) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := os.FileMode(0o600)
	if dir {
		want = os.ModeDir | 0o700
	}
	if fi.Mode() != want {
		t.Errorf("%s mode = %v, want %v", path, fi.Mode(), want)
	}
}

// modeRule is empty: mode bits are the rule on Unix.
const modeRule = ""

// symlinkOK: os.Symlink makes a symlink.
func symlinkOK(*testing.T, string) {}
