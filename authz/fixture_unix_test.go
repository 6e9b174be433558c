//go:build unix

package authz_test

import "testing"

// unixFixture lets the symlink fixture be made: its links and paths are
// Unix's.
func unixFixture(testing.TB) {}

// sysPath is the Unix path p as this system writes it: as it is.
func sysPath(p string) string { return p }

// globDirName is a directory name full of glob characters.
const globDirName = "proj[1]*?"
