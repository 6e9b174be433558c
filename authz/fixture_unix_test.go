//go:build unix

package authz_test

// onWindows is false: the tables' Unix rows run.
const onWindows = false

// sysPath is the Unix path p as this system writes it: as it is.
func sysPath(p string) string { return p }

// etcDir is the system's configuration directory, the target of the
// fixture's etc link.
const etcDir = "/etc"

// globDirName is a directory name full of glob characters.
const globDirName = "proj[1]*?"

// sameFile reports whether the clean paths a and b name one file: on Unix
// when they are equal.
func sameFile(a, b string) bool { return a == b }
