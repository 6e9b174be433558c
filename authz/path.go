package authz

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxSymlinkHops bounds symlink expansion in [ResolvePath] (Linux allows 40; we allow more
// but never loop forever).
const maxSymlinkHops = 255

// dangerousFiles may not be written by a constrained source, wherever they are.
var dangerousFiles = []string{
	".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv",
	".gitconfig", ".gitmodules", ".git-credentials", ".npmrc", ".pypirc", ".netrc",
	".mcp.json", ".claude.json", ".env",
}

// dangerousDirs may not be written into (at any depth) by a constrained source.
var dangerousDirs = []string{
	".git", ".hg", ".svn", ".vscode", ".idea", ".openprogram", ".claude", ".ssh", ".gnupg",
}

// ResolvePath returns p as an absolute path with every symlink resolved, the way the
// kernel would walk it. A relative p is taken against workDir, which must then be
// absolute. For a path that does not exist yet, the deepest existing ancestor is resolved
// and the missing rest is appended, so a write through work/link -> /etc shows up as
// /etc/... A ".." that climbs out of a missing directory, a symlink loop, a NUL byte or
// any other error reading the filesystem is an error: callers must treat it as a denial.
// On Windows the path forms that alias or escape a plain path are refused before the
// walk (alternate data streams, reserved device names, trailing dots and spaces, \\?\,
// \\.\ and UNC paths, drive-relative C:x and rooted \x paths), 8.3 short names
// resolve to the long names they stand for, and junctions are followed like symlinks.
// The error names resolved paths and symlink targets: it is for logs, never for a model
// ([Confine] gives errors that are safe to show).
func ResolvePath(workDir, p string) (string, error) {
	r, _, err := resolvePath(workDir, p)
	return r, err
}

// resolvePath is [ResolvePath]; on a failure of the walk it also returns where the
// walk was (a resolved absolute path), so callers can tell a failure inside the
// working directories from one outside them.
func resolvePath(workDir, p string) (resolved, at string, err error) {
	if p == "" {
		return "", "", errors.New("resolve path: path is empty")
	}
	if strings.IndexByte(p, 0) >= 0 || strings.IndexByte(workDir, 0) >= 0 {
		return "", "", fmt.Errorf("resolve path %s: path contains a NUL byte", show(p))
	}
	if err := checkForm(p); err != nil {
		return "", "", fmt.Errorf("resolve path %s: %w", show(p), err)
	}
	full := p
	if !filepath.IsAbs(p) {
		if workDir == "" {
			return "", "", fmt.Errorf("resolve path %s: a relative path needs a working directory", show(p))
		}
		if !filepath.IsAbs(workDir) {
			return "", "", fmt.Errorf("resolve path %s: working directory %s is not absolute", show(p), show(workDir))
		}
		full = workDir + string(filepath.Separator) + p
	}
	r, at, err := walkPath(full)
	if err != nil {
		return "", at, fmt.Errorf("resolve path %s: %w", show(p), err)
	}
	return r, "", nil
}

// walkPath resolves the absolute path full component by component. On an error it
// returns the resolved path at which the walk failed.
func walkPath(full string) (resolved, at string, err error) {
	cur, rest := splitRoot(full)
	pending := splitPath(rest)
	missing := "" // first component found missing; after it the rest is only joined
	file := ""    // the entry the walk is at when it is neither a directory nor a link
	hops := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case ".":
			continue
		case "..":
			if missing != "" {
				return "", missing, fmt.Errorf("%s does not exist, so %q cannot climb out of it", show(missing), "..")
			}
			cur, file = filepath.Dir(cur), ""
			continue
		}
		next := filepath.Join(cur, c)
		if missing != "" {
			cur = next
			continue
		}
		if file != "" {
			// Unix's lstat says so itself; Windows answers "path not
			// found", which would read as a missing name.
			return "", file, fmt.Errorf("%s is not a directory", show(file))
		}
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			missing = next
			cur = next
			continue
		}
		if err != nil {
			return "", next, err
		}
		if next, err = longName(next); err != nil {
			return "", next, err
		}
		link, err := isLink(next, fi)
		if err != nil {
			return "", next, err
		}
		if !link {
			cur = next
			if !fi.IsDir() {
				file = next
			}
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", next, fmt.Errorf("too many levels of symbolic links at %s", show(next))
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", next, err
		}
		if target == "" {
			return "", next, fmt.Errorf("symlink %s has an empty target", show(next))
		}
		if err := checkForm(target); err != nil {
			return "", next, fmt.Errorf("symlink %s: %w", show(next), err)
		}
		if filepath.IsAbs(target) {
			cur, target = splitRoot(target)
		}
		pending = append(splitPath(target), pending...)
	}
	return cur, "", nil
}

// splitRoot splits the absolute path p into its root (the volume and a
// separator: "/" on Unix, `C:\` or `\\server\share\` on Windows) and the rest.
func splitRoot(p string) (root, rest string) {
	vol := filepath.VolumeName(p)
	return vol + string(filepath.Separator), p[len(vol):]
}

// splitPath splits p at every path separator (on Windows both \ and /),
// dropping empty components.
func splitPath(p string) []string {
	return strings.FieldsFunc(p, func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) })
}

// InsideWorkDirs reports whether resolved (an absolute path from [ResolvePath]) is one of
// workDirs or below one. Each working directory is itself resolved first; relative or
// unresolvable working directories are ignored, and a relative resolved path is never
// inside. resolved is compared as given: resolve it first.
func InsideWorkDirs(resolved string, workDirs []string) bool {
	if !filepath.IsAbs(resolved) || strings.IndexByte(resolved, 0) >= 0 {
		return false
	}
	return insideAny(filepath.Clean(resolved), workDirs) != ""
}

// IsDangerousPath reports whether a constrained source must not write resolved: its last
// component is a dangerous file (.bashrc, .env, .gitconfig, ...), or any component of the
// whole absolute path is a dangerous directory (.git, .ssh, .openprogram and the profile
// state directories .openprogram-<profile>, ...); on Windows also the autostart places
// (the Startup folder, PowerShell's profiles and module folders). Names are
// compared the way case-insensitive and Windows-style filesystems alias them: ignoring
// case (Unicode folding), trailing dots and spaces, an NTFS stream suffix (":..."), and
// code points HFS+ ignores. A relative or empty path is reported dangerous. The state
// directory at another path is protected by [ConfineWrite].
func IsDangerousPath(resolved string) bool { return protection(resolved) != "" }

// protection returns why a constrained source must not write resolved:
// PhraseProtectedFile, PhraseProtectedDir, or "" when it may. The state
// directory at another path is [InStateDir]'s to answer.
func protection(resolved string) string {
	if !filepath.IsAbs(resolved) || strings.IndexByte(resolved, 0) >= 0 {
		return PhraseProtectedDir
	}
	resolved = filepath.Clean(resolved)
	comps := splitPath(resolved)
	for i, c := range comps {
		n := normaliseName(c)
		for _, d := range dangerousDirs {
			if strings.EqualFold(n, d) {
				return PhraseProtectedDir
			}
		}
		// ~/.openprogram-<profile> (OPENPROGRAM_PROFILE) is a state directory too.
		if len(n) > len(".openprogram-") && strings.EqualFold(n[:len(".openprogram-")], ".openprogram-") {
			return PhraseProtectedDir
		}
		if i == len(comps)-1 {
			for _, f := range dangerousFiles {
				if strings.EqualFold(n, f) {
					return PhraseProtectedFile
				}
			}
		}
	}
	return systemProtection(comps)
}

// normaliseName reduces a path component to the name a forgiving filesystem would see.
func normaliseName(c string) string {
	c = strings.Map(func(r rune) rune {
		if hfsIgnorable(r) {
			return -1
		}
		return r
	}, c)
	if i := strings.IndexByte(c, ':'); i >= 0 {
		c = c[:i]
	}
	return strings.TrimRight(c, ". ")
}

// hfsIgnorable reports code points that HFS+ drops from file names (the set behind
// CVE-2014-9390), so ".g\u200cit" is ".git" there.
func hfsIgnorable(r rune) bool {
	return (r >= 0x200c && r <= 0x200f) || (r >= 0x202a && r <= 0x202e) ||
		(r >= 0x206a && r <= 0x206f) || r == 0xfeff
}
