//go:build !windows

package cli_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/openprogram/openprogram/cli"
)

// testExe is the binary path the tests hand to cli.App.
const testExe = "/opt/openprogram/bin/openprogram"

// exeSuffix ends the name of a program file.
const exeSuffix = ""

// homeVars is the environment that makes home the user's home directory.
func homeVars(home string) cli.Env { return cli.Env{"HOME=" + home} }

// userConfigDir is where Claude Desktop and VS Code keep their user files
// under home.
func userConfigDir(home string) string {
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Application Support")
	}
	return filepath.Join(home, ".config")
}

// checkPrivate fails the test unless the file or directory at path is
// open to its owner alone: mode 0600 for a file, 0700 for a directory.
func checkPrivate(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := os.FileMode(0o600)
	if fi.IsDir() {
		want = 0o700
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("mode of %s = %04o, want %04o", path, got, want)
	}
}
