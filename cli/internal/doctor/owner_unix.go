//go:build unix

package doctor

import (
	"io/fs"
	"os"
	"strconv"
	"syscall"

	"github.com/openprogram/openprogram/cli/internal/shell"
)

// ownerFix is the command that gives the file back to the current user,
// or "" when it is theirs.
func ownerFix(fi fs.FileInfo, path string) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return "chown " + strconv.Itoa(os.Getuid()) + " " + shell.Quote(path)
	}
	return ""
}
