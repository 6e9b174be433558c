//go:build unix

package doctor

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/internal/shell"
)

// dirProblem says what lets others into the state directory dir (fi is
// its Lstat) and the command that fixes it, or "" when it is owner-only.
func dirProblem(dir string, fi fs.FileInfo) (info, fix string) {
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Sprintf("%s has mode %04o", dir, fi.Mode().Perm()), "chmod 700 " + shell.Native.Quote(dir)
	}
	return "", ""
}

// dirPrivateNote is what the state directory check adds when it passes.
const dirPrivateNote = " (0700)"

// modeFix is the command that makes the secret file at path mode 0600, or
// "" when it is.
func modeFix(fi fs.FileInfo, path string) string {
	if fi.Mode().Perm() != 0o600 {
		return privatefile.RestrictCommand(path)
	}
	return ""
}

// ownerFix is the command that gives the file back to the current user,
// or "" when it is theirs.
func ownerFix(fi fs.FileInfo, path string) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return "chown " + strconv.Itoa(os.Getuid()) + " " + shell.Native.Quote(path)
	}
	return ""
}

// openClientFile says how the client's file at path (mode mode), which
// holds secrets, is open to other users and the command that closes it,
// or "" when it is not.
func openClientFile(path string, mode fs.FileMode) (info, fix string) {
	if mode&0o077 != 0 {
		return fmt.Sprintf("is mode %04o", mode), privatefile.RestrictCommand(path)
	}
	return "", ""
}

// linkFix is the command that replaces the symlink at path with a copy of
// the file it points to.
func linkFix(path string) string {
	q := shell.Native.Quote(path)
	return `cp --remove-destination "$(readlink -f ` + q + `)" ` + q
}
