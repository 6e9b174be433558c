//go:build windows

package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/windows"

	"github.com/openprogram/openprogram/cli"
	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/internal/wine"
)

// testExe is the binary path the tests hand to cli.App: under Program
// Files, with a space, as an installed openprogram.exe is.
const testExe = `C:\Program Files\OpenProgram\openprogram.exe`

// exeSuffix ends the name of a program file.
const exeSuffix = ".exe"

// testRoot is the root of an absolute path.
const testRoot = `C:\`

// homeVar names the user's home directory in the environment.
const homeVar = "USERPROFILE"

// workDirsJSON is an agent.work_dirs value of one absolute directory.
const workDirsJSON = `["C:\\srv\\work"]`

// groffRequired: Windows has no groff: the man page (for Unix systems) is rendered by the Unix CI.
const groffRequired = false

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

// fileFixPrefix and dirFixPrefix start the fix doctor gives for a secret
// file and for the state directory that others can open.
const (
	fileFixPrefix = "icacls "
	dirFixPrefix  = "icacls "
)

// openToOthers lets other users into the file or directory at path: a DACL
// that grants Everyone read access beside the owner. Wine keeps no DACLs,
// so the test skips there.
func openToOthers(t *testing.T, path string) {
	t.Helper()
	if wine.Detected() {
		t.Skip("Wine keeps no DACLs: a file open to others is made and refused on Windows only")
	}
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;FA;;;OW)(A;;FA;;;SY)(A;;FR;;;WD)")
	if err != nil {
		t.Fatal(err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		t.Fatal(err)
	}
	if err := windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		t.Fatal(err)
	}
}

// skipWithoutSymlinks skips under Wine, whose CreateSymbolicLink reports
// success and makes nothing.
func skipWithoutSymlinks(t *testing.T) {
	t.Helper()
	if wine.Detected() {
		t.Skip("Wine's CreateSymbolicLink makes nothing: symlinked state is refused on Windows only")
	}
}

// missingTool skips the test: Wine, and a Windows without Git for
// Windows, have no POSIX shell to check a script with, nor a bash for the
// bash tool (windows-latest has Git for Windows' bash).
func missingTool(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Skipf(format+" (no POSIX shell on this Windows: Wine has none; windows-latest has Git for Windows' bash)", args...)
}

// fakeClaude puts a claude.cmd in dir (as npm installs Claude Code) that
// appends its command line to log; claudeExeArg is how that line holds
// testExe (quoted: it has a space).
func fakeClaude(t *testing.T, dir, log string) {
	t.Helper()
	script := "@echo %*>>\"" + log + "\"\r\n"
	if err := os.WriteFile(filepath.Join(dir, "claude.cmd"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
}

const claudeExeArg = `"` + testExe + `"`

// tokenExport is the PowerShell line doctor and the install hints print to
// set the token from the file at path (quoted for PowerShell: single
// quotes, an inner one doubled).
func tokenExport(path string) string {
	return "$env:OPENPROGRAM_MCP_TOKEN = (Get-Content -Raw -LiteralPath '" + strings.ReplaceAll(path, "'", "''") + "').Trim()"
}

// tokenPathExport is the PowerShell line for a shell profile that sets the
// token from the file `openprogram mcp token path` names.
const tokenPathExport = "$env:OPENPROGRAM_MCP_TOKEN = (Get-Content -Raw -LiteralPath (openprogram mcp token path)).Trim()"

// otherShell is what a hint for this system's shell must not hold: POSIX
// syntax on Windows, where people paste into PowerShell.
var otherShell = []string{"export ", "$(cat"}
