//go:build windows

package cli_test

import (
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/cli"
	"github.com/openprogram/openprogram/internal/privatefile"
)

// testExe is the binary path the tests hand to cli.App: under Program
// Files, with a space, as an installed openprogram.exe is.
const testExe = `C:\Program Files\OpenProgram\openprogram.exe`

// exeSuffix ends the name of a program file.
const exeSuffix = ".exe"

// homeVars is the environment that makes home the user's profile:
// %USERPROFILE%, and %APPDATA% under it as Windows sets it.
func homeVars(home string) cli.Env {
	return cli.Env{"USERPROFILE=" + home, "APPDATA=" + userConfigDir(home)}
}

// userConfigDir is where Claude Desktop and VS Code keep their user files
// under the profile home: %APPDATA%.
func userConfigDir(home string) string { return filepath.Join(home, "AppData", "Roaming") }

// checkPrivate fails the test unless the file or directory at path is
// open to its owner alone: its DACL grants the user and SYSTEM only. Wine
// keeps no DACLs (every file reads back open to everyone, and
// privatefile.CheckPrivate has nothing to check there): the check is real
// on Windows only.
func checkPrivate(t *testing.T, path string) {
	t.Helper()
	f, err := privatefile.OpenNoFollow(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := privatefile.CheckPrivate(f); err != nil {
		t.Errorf("%s is not owner-only: %v", path, err)
	}
}
