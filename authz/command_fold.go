//go:build windows || darwin

package authz

import (
	"strings"
	"unicode"
)

// commandForm is a command as deny and ask rules of the command tools
// compare it where the system finds programs ignoring letter case: in
// [foldCase]. On Windows PowerShell and cmd read commands, cmdlets and
// parameters ignoring case, and Git's bash finds RM as rm.exe; on macOS
// the default (case-insensitive) file system runs /bin/rm as RM. So
// deny(Remove-Item *) must also stop remove-item, and deny(rm:*) RM.
// Allow rules compare the command as written: arguments may be
// case-sensitive (git branch -d and -D), and an allow rule must never
// grant more than the owner wrote.
func commandForm(cmd string) string { return foldCase(cmd) }

// foldCase lowers s the way Windows compares names: a rune is lowered
// only when its lower case upper-cases back to its own upper case
// ([sameName] on Windows), so the Kelvin sign stays and write(C:\w\k*)
// does not allow C:\w\<KELVIN SIGN>x, another file.
func foldCase(s string) string {
	return strings.Map(func(r rune) rune {
		if l := unicode.ToLower(r); unicode.ToUpper(l) == unicode.ToUpper(r) {
			return l
		}
		return r
	}, s)
}
