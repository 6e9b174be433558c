//go:build unix

package authz

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

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
