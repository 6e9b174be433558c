//go:build windows

package doctor

import (
	"io/fs"

	"github.com/openprogram/openprogram/internal/shell"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// notPrivate reports why the file or directory at path is not owner-only
// (its DACL lets someone else in), or "" when it is. Under Wine, which
// keeps no DACLs, there is nothing to check and it reports "".
func notPrivate(path string) string {
	f, err := privatefile.OpenNoFollow(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if err := privatefile.CheckPrivate(f); err != nil {
		return err.Error()
	}
	return ""
}

// dirProblem says what lets others into the state directory dir and the
// command that fixes it, or "" when its DACL is owner-only.
func dirProblem(dir string, _ fs.FileInfo) (info, fix string) {
	if why := notPrivate(dir); why != "" {
		return dir + " is not owner-only: " + why, privatefile.RestrictCommand(dir)
	}
	return "", ""
}

// dirPrivateNote is what the state directory check adds when it passes:
// under Wine the DACL was not checked, since Wine keeps none.
var dirPrivateNote = func() string {
	if !privatefile.ACLsEnforced() {
		return " (owner-only DACL not checked: Wine keeps no ACLs)"
	}
	return " (owner-only DACL)"
}()

// modeFix: Windows keeps no mode bits; [ownerFix] checks the DACL.
func modeFix(fs.FileInfo, string) string { return "" }

// ownerFix is the command that makes the file owner-only again, or "" when
// it is.
func ownerFix(_ fs.FileInfo, path string) string {
	if notPrivate(path) != "" {
		return privatefile.RestrictCommand(path)
	}
	return ""
}

// openClientFile says how the client's file at path, which holds secrets,
// is open to other users and the command that closes it, or "" when its
// DACL is owner-only.
func openClientFile(path string, _ fs.FileMode) (info, fix string) {
	if why := notPrivate(path); why != "" {
		return "is not owner-only (" + why + ")", privatefile.RestrictCommand(path)
	}
	return "", ""
}

// linkFix is the PowerShell line that replaces the symlink at path with a
// copy of the file it points to.
func linkFix(path string) string {
	q := shell.Native.Quote(path)
	return "$t = (Get-Item -LiteralPath " + q + ").Target; Remove-Item -LiteralPath " + q + "; Copy-Item -LiteralPath $t -Destination " + q
}
