//go:build windows

package clients

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openprogram/openprogram/cli/internal/settings"
	"github.com/openprogram/openprogram/internal/privatefile"
)

// defaultPathExt is what Windows runs without an extension when PATHEXT
// is unset.
const defaultPathExt = ".COM;.EXE;.BAT;.CMD"

// programNames are the file names a command called file may have on PATH:
// file with each extension of PATHEXT, in its order.
func programNames(env settings.Env, file string) []string {
	exts := env.Get("PATHEXT")
	if exts == "" {
		exts = defaultPathExt
	}
	var names []string
	for _, e := range strings.Split(exts, ";") {
		if e = strings.TrimSpace(e); strings.HasPrefix(e, ".") {
			names = append(names, file+strings.ToLower(e))
		}
	}
	return names
}

// IsProgram reports whether path is a regular file the system can run: on
// Windows one whose extension is .exe, .com, .bat or .cmd (Windows keeps no
// execute bit).
func IsProgram(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	return slices.Contains([]string{".exe", ".com", ".bat", ".cmd"}, strings.ToLower(filepath.Ext(path)))
}

// restrictCommand is the command that makes the client file at path
// owner-only again: icacls, as privatefile writes it.
func restrictCommand(path string) string { return privatefile.RestrictCommand(path) }
