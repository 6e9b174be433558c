//go:build windows

package authz

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// checkForm refuses the Windows path forms that name something other than
// the plain file they seem to, or that escape the walk from a drive root:
// \\?\, \\.\ and UNC paths (any two leading separators), a path rooted
// without a drive (\x), a drive-relative path (C:x), and any component
// holding a stream (":"), a wildcard or control character, a trailing dot
// or space, or a reserved device name with or without an extension (CON,
// nul.txt, COM1, LPT1.log, CONIN$). Refusing beats normalising: the
// system's own rules for these forms differ between its APIs.
func checkForm(p string) error {
	if len(p) >= 2 && os.IsPathSeparator(p[0]) && os.IsPathSeparator(p[1]) {
		return errors.New(`device, \\?\ and UNC paths are refused`)
	}
	if len(p) >= 1 && os.IsPathSeparator(p[0]) {
		return errors.New("a path rooted without a drive is refused")
	}
	vol := filepath.VolumeName(p)
	if vol != "" && !filepath.IsAbs(p) {
		return errors.New("a drive-relative path is refused")
	}
	for _, c := range splitPath(p[len(vol):]) {
		if err := checkComponent(c); err != nil {
			return fmt.Errorf("component %s: %w", show(c), err)
		}
	}
	return nil
}

// checkComponent refuses a path component Windows would read as another
// name or as a device.
func checkComponent(c string) error {
	if c == "." || c == ".." {
		return nil
	}
	for _, r := range c {
		switch {
		case r == ':':
			return errors.New("an alternate data stream is refused")
		case r < 0x20, strings.ContainsRune(`<>"|?*`, r):
			return errors.New("a wildcard or control character is refused")
		}
	}
	if last := c[len(c)-1]; last == '.' || last == ' ' {
		return errors.New("a trailing dot or space is refused")
	}
	if reservedName(c) {
		return errors.New("a reserved device name is refused")
	}
	return nil
}

// reservedName reports whether Windows opens the component c as a device:
// CON, PRN, AUX, NUL, COM0-9, LPT0-9 (also with a superscript 1, 2 or 3),
// CONIN$ and CONOUT$, in any case, followed by nothing, spaces or an
// extension.
func reservedName(c string) bool {
	base := c
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	base = strings.ToUpper(strings.TrimRight(base, " "))
	switch base {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	for _, dev := range []string{"COM", "LPT"} {
		if rest, ok := strings.CutPrefix(base, dev); ok {
			switch rest {
			case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "\u00b9", "\u00b2", "\u00b3":
				return true
			}
		}
	}
	return false
}

// longName returns the existing path next with its last component
// replaced by the long name it stands for, as the directory lists it:
// GIT~1 is .git, and the rules must see .git. Every component is looked
// up, not only one with a "~" (the names Windows makes itself): an
// administrator may give a directory any 8.3 alias (SetFileShortName),
// and a FAT volume written elsewhere may carry any, so GITDIR may be .git
// too. It costs one FindFirstFile per existing component, beside the
// walk's Lstat (GetLongPathName does the same lookup, and Wine's skips
// some names); the names come back as the disk writes them. A component
// whose name cannot be read is an error (the walk fails closed).
func longName(next string) (string, error) {
	in, err := syscall.UTF16PtrFromString(next)
	if err != nil {
		return next, err
	}
	var fd syscall.Win32finddata
	h, err := syscall.FindFirstFile(in, &fd)
	if err != nil {
		return next, fmt.Errorf("long name of %s: %w", show(next), err)
	}
	_ = syscall.FindClose(h)
	long := syscall.UTF16ToString(fd.FileName[:])
	if err := checkComponent(long); err != nil || long == "" || long == "." || long == ".." || strings.ContainsAny(long, `\/`) {
		return next, fmt.Errorf("long name of %s is %s", show(next), show(long))
	}
	return filepath.Join(filepath.Dir(next), long), nil
}

// isLink reports whether the walk must follow the existing entry next: a
// symlink, or any other name-surrogate reparse point (a junction, a volume
// mount point), which os.Lstat reports as irregular. A name surrogate whose
// target cannot be read is an error.
func isLink(next string, fi fs.FileInfo) (bool, error) {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return true, nil
	}
	if fi.Mode()&fs.ModeIrregular == 0 {
		return false, nil
	}
	in, err := syscall.UTF16PtrFromString(next)
	if err != nil {
		return false, err
	}
	var fd syscall.Win32finddata
	h, err := syscall.FindFirstFile(in, &fd)
	if err != nil {
		return false, fmt.Errorf("reparse tag of %s: %w", show(next), err)
	}
	_ = syscall.FindClose(h)
	const nameSurrogate = 0x20000000 // IsReparseTagNameSurrogate
	if fd.FileAttributes&syscall.FILE_ATTRIBUTE_REPARSE_POINT == 0 || fd.Reserved0&nameSurrogate == 0 {
		return false, nil
	}
	return true, nil
}

// within reports whether p is dir or below it (both clean and absolute),
// comparing names the way Windows does: ignoring case, component by
// component (so C:\ holds C:\x, and C:\Work holds c:\WORK\x).
func within(p, dir string) bool {
	pv, dv := filepath.VolumeName(p), filepath.VolumeName(dir)
	if !sameName(pv, dv) {
		return false
	}
	pc, dc := splitPath(p[len(pv):]), splitPath(dir[len(dv):])
	if len(pc) < len(dc) {
		return false
	}
	for i, d := range dc {
		if !sameName(pc[i], d) {
			return false
		}
	}
	return true
}

// sameName reports whether Windows takes the names a and b for one: each
// rune alike or, ignoring case, alike both upper-cased and lower-cased.
// Unicode folding (strings.EqualFold) also joins the Kelvin sign and k,
// the long s and s, which name different files on NTFS: when unsure, two
// names differ (a path is then outside a directory, never inside one it
// is not).
func sameName(a, b string) bool {
	n, ok := foldedPrefix(a, b)
	return ok && n == len(a)
}

// foldedPrefix reports whether a begins with prefix as [sameName]
// compares, and the length in a of that beginning.
func foldedPrefix(a, prefix string) (int, bool) {
	i := 0
	for prefix != "" {
		if i >= len(a) {
			return 0, false
		}
		ra, na := utf8.DecodeRuneInString(a[i:])
		rp, np := utf8.DecodeRuneInString(prefix)
		if ra != rp && (unicode.ToUpper(ra) != unicode.ToUpper(rp) || unicode.ToLower(ra) != unicode.ToLower(rp)) {
			return 0, false
		}
		i += na
		prefix = prefix[np:]
	}
	return i, true
}

// systemProtection returns why a constrained source must not write the
// path of components comps on Windows, beyond the shared lists: the Startup
// folders (…\Start Menu\Programs\Startup, the user's and all users'), the
// PowerShell folders of Documents (profiles, and modules that load by
// name), and a PowerShell profile (*profile.ps1) anywhere, so the one of
// $PSHOME too.
func systemProtection(comps []string) string {
	for i, c := range comps {
		n := normaliseName(c)
		if i+2 < len(comps) && strings.EqualFold(n, "Start Menu") &&
			strings.EqualFold(normaliseName(comps[i+1]), "Programs") && strings.EqualFold(normaliseName(comps[i+2]), "Startup") {
			return PhraseProtectedDir
		}
		if i > 0 && (strings.EqualFold(n, "PowerShell") || strings.EqualFold(n, "WindowsPowerShell")) && i < len(comps)-1 {
			parent := normaliseName(comps[i-1])
			if strings.EqualFold(parent, "Documents") || strings.EqualFold(parent, "My Documents") {
				return PhraseProtectedDir
			}
		}
	}
	if len(comps) > 0 && len(comps[len(comps)-1]) >= len("profile.ps1") {
		last := normaliseName(comps[len(comps)-1])
		if len(last) >= len("profile.ps1") && strings.EqualFold(last[len(last)-len("profile.ps1"):], "profile.ps1") {
			return PhraseProtectedFile
		}
	}
	return ""
}

// globForm is a path as a permission rule's glob sees it on Windows:
// slash-separated (path.Match takes \ for an escape) and in [foldCase]
// (Windows compares names ignoring case), so write(C:\work\*.md) matches
// c:\WORK\A.MD.
func globForm(p string) string { return foldCase(filepath.ToSlash(p)) }

// samePath reports whether the clean paths a and b name the same file,
// ignoring case as Windows does ([sameName]).
func samePath(a, b string) bool { return sameName(a, b) }

// hasPathPrefix reports whether p starts with prefix, ignoring case as
// Windows does ([sameName]).
func hasPathPrefix(p, prefix string) bool {
	_, ok := foldedPrefix(p, prefix)
	return ok
}
