//go:build unix

package authz

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// checkForm refuses the path forms the system aliases to another file: on
// Unix every byte string but NUL (checked by the caller) names what it says.
func checkForm(string) error { return nil }

// longName returns next (an existing path) as the walk keeps it: Unix has
// no second name for a file.
func longName(next string) (string, error) { return next, nil }

// isLink reports whether the walk must follow the existing entry next: a
// symlink.
func isLink(_ string, fi fs.FileInfo) (bool, error) { return fi.Mode()&fs.ModeSymlink != 0, nil }

// within reports whether p is dir or below it (both clean and absolute),
// comparing bytes as Unix names compare.
func within(p, dir string) bool {
	if dir == string(filepath.Separator) {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// systemProtection adds the system's own autostart places to the dangerous
// files and directories: Unix has none beyond the shared lists.
func systemProtection([]string) string { return "" }

// globForm is a path as a permission rule's glob sees it: on Unix as it
// is.
func globForm(p string) string { return p }

// samePath reports whether the clean paths a and b name the same file,
// comparing bytes as Unix names compare.
func samePath(a, b string) bool { return a == b }

// hasPathPrefix reports whether p starts with prefix, byte for byte.
func hasPathPrefix(p, prefix string) bool { return strings.HasPrefix(p, prefix) }
