//go:build windows

package host

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// checkStateDirPrivate refuses a state directory not owned by the current
// user or whose DACL lets anyone but that user and SYSTEM in.
func checkStateDirPrivate(dir string, _ fs.FileInfo) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("inspect state directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := privatefile.CheckPrivate(d); err != nil {
		return fmt.Errorf("state directory %s is open to others (%v); run: %s", dir, err, privatefile.RestrictCommand(dir))
	}
	return nil
}
