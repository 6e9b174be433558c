//go:build unix

package authz

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwnerFile applies the Unix rules to the open owner.json: mode exactly
// 0600 and owned by the effective user.
func checkOwnerFile(_ *os.File, fi fs.FileInfo, target string) error {
	if perm := fi.Mode().Perm(); perm != 0o600 {
		return fmt.Errorf("%w: %s has mode %04o, want 0600; run chmod 600 on it if its contents are yours", ErrOwnerFile, target, perm)
	}
	if err := checkOwnedByUser(fi); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrOwnerFile, target, err)
	}
	return nil
}

// checkOwnedByUser requires fi to belong to the effective user.
func checkOwnedByUser(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("cannot read the file owner")
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("owned by uid %d, want the current user (uid %d)", st.Uid, uid)
	}
	return nil
}
