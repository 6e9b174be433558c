//go:build unix

package host

import (
	"fmt"
	"io/fs"

	"github.com/openprogram/openprogram/internal/shell"
)

// checkStateDirPrivate refuses a state directory with any group or other
// permission bit.
func checkStateDirPrivate(dir string, fi fs.FileInfo) error {
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("state directory %s has mode %04o; run: chmod 700 %s", dir, fi.Mode().Perm(), shell.Native.Quote(dir))
	}
	return nil
}
