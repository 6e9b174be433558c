//go:build windows

package authz

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// checkOwnerFile applies the Windows rule to the open owner.json: owned by
// the current user, and a DACL that lets nobody but that user and SYSTEM in.
func checkOwnerFile(f *os.File, _ fs.FileInfo, target string) error {
	if err := privatefile.CheckPrivate(f); err != nil {
		return fmt.Errorf("%w: %s is open to others (%w); run %s if its contents are yours", ErrOwnerFile, target, err, privatefile.RestrictCommand(target))
	}
	return nil
}
