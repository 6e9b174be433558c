//go:build !windows

package clients

import (
	"os"

	"github.com/openprogram/openprogram/cli/internal/settings"
	"github.com/openprogram/openprogram/internal/shell"
)

// restrictCommand is the command that makes the client file at path
// owner-only again: chmod 600, the path quoted for the shell.
func restrictCommand(path string) string { return "chmod 600 " + shell.Native.Quote(path) }

// programNames are the file names a command called file may have on PATH.
func programNames(_ settings.Env, file string) []string { return []string{file} }

// IsProgram reports whether path is a regular file the system can run
// (on Unix: one with an execute bit).
func IsProgram(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
