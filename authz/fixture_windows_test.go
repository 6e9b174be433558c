//go:build windows

package authz_test

import (
	"os"
	"path/filepath"
	"strings"
)

// onWindows is true: the tables' Windows rows run, their Unix-only rows
// (/proc, the root of a drive-less path) do not.
const onWindows = true

// sysPath is the Unix path p as this system writes it: an absolute /x is
// \x on the temporary directory's drive.
func sysPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return p
	}
	return filepath.VolumeName(os.TempDir()) + filepath.FromSlash(p)
}

// etcDir is the system's configuration directory, the target of the
// fixture's etc link: the one of the hosts file.
var etcDir = filepath.Join(os.Getenv("SystemRoot"), "System32", "drivers", "etc")

// globDirName is a directory name full of the glob characters Windows
// allows in a name ("*" and "?" it does not).
const globDirName = "proj[1]"

// sameFile reports whether the clean paths a and b name one file: on
// Windows when they are equal ignoring case (the system's own paths, such
// as %SystemRoot%, are not always written in the case of the disk).
func sameFile(a, b string) bool { return strings.EqualFold(a, b) }
