//go:build !windows

package cli_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/cli"
)

// testExe is the binary path the tests hand to cli.App.
const testExe = "/opt/openprogram/bin/openprogram"

// exeSuffix ends the name of a program file.
const exeSuffix = ""

// testRoot is the root of an absolute path.
const testRoot = "/"

// homeVar names the user's home directory in the environment.
const homeVar = "HOME"

// workDirsJSON is an agent.work_dirs value of one absolute directory.
const workDirsJSON = `["/srv/work"]`

// groffRequired: CI requires groff to render the man page (Debian: groff-base).
const groffRequired = true

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

// fileFixPrefix and dirFixPrefix start the fix doctor gives for a secret
// file and for the state directory that others can open.
const (
	fileFixPrefix = "chmod 600 "
	dirFixPrefix  = "chmod 700 "
)

// openToOthers lets other users into the file or directory at path: mode
// 0644 or 0755.
func openToOthers(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	mode := os.FileMode(0o644)
	if fi.IsDir() {
		mode = 0o755
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// skipWithoutSymlinks: Unix always makes symbolic links.
func skipWithoutSymlinks(*testing.T) {}

// missingTool fails the test: on Unix the tools the tests check scripts
// with (sh, bash, the bash tool) are there.
func missingTool(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf(format, args...)
}

// fakeClaude puts a `claude` in dir that appends its arguments, as one
// line, to log; claudeExeArg is how it logs testExe.
func fakeClaude(t *testing.T, dir, log string) {
	t.Helper()
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + log + "\n"
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
}

const claudeExeArg = testExe

// tokenExport is the POSIX shell line doctor and the install hints print to
// set the token from the file at path (quoted for sh).
func tokenExport(path string) string {
	return `export OPENPROGRAM_MCP_TOKEN="$(cat '` + strings.ReplaceAll(path, "'", `'\''`) + `')"`
}

// tokenPathExport is the POSIX shell line for a shell profile that sets the
// token from the file `openprogram mcp token path` names.
const tokenPathExport = `export OPENPROGRAM_MCP_TOKEN="$(cat "$(openprogram mcp token path)")"`

// otherShell is what a hint for this system's shell must not hold:
// PowerShell syntax outside Windows.
var otherShell = []string{"$env:", "Get-Content"}
