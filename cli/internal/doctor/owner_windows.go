//go:build windows

package doctor

import (
	"io/fs"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// ownerFix is the command that makes the file owner-only again, or "" when
// it is.
func ownerFix(_ fs.FileInfo, path string) string {
	f, err := privatefile.OpenNoFollow(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if privatefile.CheckPrivate(f) != nil {
		return privatefile.RestrictCommand(path)
	}
	return ""
}
