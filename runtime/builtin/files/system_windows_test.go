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

// symlink makes link point at target and reports whether the system made
// it: Wine's CreateSymbolicLink reports success and makes nothing, and a
// Windows user may lack the right to. The rows that need the link then
// skip (the windows-latest job runs them); the test goes on.
func symlink(t *testing.T, target, link string) bool {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Logf("no symlink %s: %v; the rows through it are skipped", filepath.Base(link), err)
		return false
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		why := "the system reported it made and made none"
		if wine.Detected() {
			why = "Wine's CreateSymbolicLink reports success and makes nothing"
		}
		t.Logf("no symlink %s: %s; the rows through it are skipped (the windows-latest job runs them)", filepath.Base(link), why)
		return false
	}
	return true
}

// systemGateRows are TestGateDenialTexts' rows through the system's own
// paths: %SystemRoot%, the all-users Startup folder, another drive, and
// the forms Windows reads as another file or a device.
func systemGateRows() []gateRow {
	win := os.Getenv("SystemRoot")
	target := func(tool, p, end string) string { return "hard constraint: " + tool + " target " + shown(p) + end }
	const outside, unres = " is outside the working directories", " cannot be resolved"
	startup := filepath.VolumeName(win) + `\ProgramData\Microsoft\Windows\Start Menu\Programs\StartUp\x.bat`
	return []gateRow{
		{"write", map[string]any{"path": win + `\System32\config\SAM`, "content": "x"}, target("write", win+`\System32\config\SAM`, outside)},
		{"write", map[string]any{"path": win + `\nonexistent\..\x`, "content": "x"}, target("write", win+`\nonexistent\..\x`, outside)},
		{"write", map[string]any{"path": startup, "content": "x"}, target("write", startup, outside)},
		{"write", map[string]any{"path": `Z:\x`, "content": "x"}, target("write", `Z:\x`, outside)},
		{"edit", map[string]any{"path": `\\?\` + win + `\x`, "old_string": "a", "new_string": "b"}, target("edit", `\\?\`+win+`\x`, unres)},
		{"write", map[string]any{"path": `ok.txt:hidden`, "content": "x"}, target("write", `ok.txt:hidden`, unres)},
		{"write", map[string]any{"path": `sub\CON`, "content": "x"}, target("write", `sub\CON`, unres)},
		{"apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Add File: ..\\x\n+x\n*** End Patch"}, target("apply_patch", `..\x`, outside)},
		{"read", map[string]any{"path": win + `\win.ini`}, "authority tier paired does not allow fs.read"},
	}
}
