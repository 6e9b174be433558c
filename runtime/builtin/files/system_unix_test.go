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

// symlink makes link point at target: on Unix always (a failure ends the
// test), so it reports true.
func symlink(t *testing.T, target, link string) bool {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return true
}

// systemGateRows are TestGateDenialTexts' rows through the system's own
// paths: Linux's /proc and /etc.
func systemGateRows() []gateRow {
	return []gateRow{
		{"write", map[string]any{"path": "/proc/self/cwd/x", "content": "x"}, "hard constraint: write target /proc/self/cwd/x is outside the working directories"},
		{"write", map[string]any{"path": "/proc/self/exe/../x", "content": "x"}, "hard constraint: write target /proc/self/exe/../x is outside the working directories"},
		{"write", map[string]any{"path": "/etc/nonexistent/../x", "content": "x"}, "hard constraint: write target /etc/nonexistent/../x is outside the working directories"},
		{"edit", map[string]any{"path": "/proc/self/fd/1/x", "old_string": "a", "new_string": "b"}, "hard constraint: edit target /proc/self/fd/1/x is outside the working directories"},
		{"apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Add File: /proc/self/cwd/../x\n+x\n*** End Patch"}, "hard constraint: apply_patch target /proc/self/cwd/../x is outside the working directories"},
		{"read", map[string]any{"path": "/proc/self/environ"}, "authority tier paired does not allow fs.read"},
	}
}
