//go:build windows

package authz_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unixFixture skips a test built on the symlink fixture: its links point
// at Unix paths (/etc) and its tables name Unix absolute paths (/etc/passwd,
// /proc/self/cwd), which Windows refuses before anything else. The
// Windows forms have their own tables: TestWindowsPathForms here and
// TestWindowsPathTricks in runtime/builtin/files (links and junctions
// included, on Windows).
func unixFixture(tb testing.TB) {
	tb.Helper()
	tb.Skip("the symlink fixture and its tables are Unix's (/etc, /proc); TestWindowsPathForms and runtime/builtin/files' TestWindowsPathTricks are Windows'")
}

// sysPath is the Unix path p as this system writes it: an absolute /x is
// \x on the temporary directory's drive.
func sysPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return p
	}
	return filepath.VolumeName(os.TempDir()) + filepath.FromSlash(p)
}

// globDirName is a directory name full of the glob characters Windows
// allows in a name ("*" and "?" it does not).
const globDirName = "proj[1]"
