//go:build windows

package bash

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/sys/windows"
)

// findShell returns the shell named by the Shell option, else the first of
// Git for Windows' bash.exe (PATH, next to git.exe on PATH, then the
// Program Files and per-user installs), pwsh and Windows PowerShell.
func findShell(configured string) shell {
	return pickShell(configured, exec.LookPath, os.Getenv, func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular()
	}, isAppExecLink)
}

// pickShell is findShell with its view of the machine passed in; appLink
// reports whether a file is an app-execution alias ([isAppExecLink]).
func pickShell(configured string, look func(string) (string, error), getenv func(string) string, exists, appLink func(string) bool) shell {
	if configured != "" {
		s := shell{path: configured, kind: kindOf(configured)}
		s.about = aboutOf(s)
		return s
	}
	if p, err := look("bash.exe"); err == nil && !startsWSL(p, getenv, appLink) {
		return shell{path: p, kind: posixShell, about: "bash (bash -c: POSIX shell syntax)"}
	}
	var gitBash []string
	if git, err := look("git.exe"); err == nil {
		dir := filepath.Dir(git) // Git\cmd or Git\mingw64\bin
		gitBash = append(gitBash, filepath.Join(dir, "..", "bin", "bash.exe"), filepath.Join(dir, "..", "..", "bin", "bash.exe"))
	}
	for _, v := range []string{"ProgramFiles", "ProgramW6432", "ProgramFiles(x86)"} {
		if d := getenv(v); d != "" {
			gitBash = append(gitBash, filepath.Join(d, "Git", "bin", "bash.exe"))
		}
	}
	if d := getenv("LOCALAPPDATA"); d != "" {
		gitBash = append(gitBash, filepath.Join(d, "Programs", "Git", "bin", "bash.exe"))
	}
	for _, p := range gitBash {
		if p = filepath.Clean(p); filepath.IsAbs(p) && exists(p) {
			return shell{path: p, kind: posixShell, about: "Git for Windows' bash (bash -c: POSIX shell syntax, Windows programs on PATH)"}
		}
	}
	if p, err := look("pwsh.exe"); err == nil {
		return shell{path: p, kind: powerShell, about: "PowerShell (pwsh: PowerShell syntax, not bash)"}
	}
	ps := "powershell.exe"
	if p, err := look(ps); err == nil {
		ps = p
	} else if p := filepath.Join(getenv("SystemRoot"), "System32", "WindowsPowerShell", "v1.0", "powershell.exe"); filepath.IsAbs(p) && exists(p) {
		ps = p
	}
	return shell{path: ps, kind: powerShell, about: "Windows PowerShell (powershell.exe: PowerShell syntax, not bash)"}
}

// startsWSL reports whether the bash.exe at p is a WSL launcher, which
// runs the command in a Linux machine, not this one: System32's bash.exe,
// any bash.exe under a WindowsApps directory (the app-execution alias
// %LOCALAPPDATA%\Microsoft\WindowsApps\bash.exe, and the Store's
// packages under Program Files\WindowsApps), and any app-execution alias.
// System32 is the one SystemRoot names and the one the system reports: an
// environment without SystemRoot (a client may start its server with a
// bare one) must not let WSL's bash through.
func startsWSL(p string, getenv func(string) string, appLink func(string) bool) bool {
	systems := []string{filepath.Join(getenv("SystemRoot"), "System32")}
	if dir, err := windows.GetSystemDirectory(); err == nil {
		systems = append(systems, dir)
	}
	for _, system := range systems {
		if filepath.IsAbs(system) && strings.HasPrefix(strings.ToLower(p), strings.ToLower(filepath.Clean(system))+`\`) {
			return true
		}
	}
	for _, c := range strings.FieldsFunc(filepath.Dir(p), func(r rune) bool { return r == '\\' || r == '/' }) {
		if strings.EqualFold(c, "WindowsApps") {
			return true
		}
	}
	return appLink(p)
}

// ioReparseTagAppExecLink is IO_REPARSE_TAG_APPEXECLINK, the reparse tag
// of an app-execution alias (a Store app's launcher under WindowsApps).
const ioReparseTagAppExecLink = 0x8000001B

// isAppExecLink reports whether the file p is an app-execution alias: a
// reparse point of tag IO_REPARSE_TAG_APPEXECLINK. A file whose tag cannot
// be read counts as one (the shell is then looked for elsewhere).
func isAppExecLink(p string) bool {
	name, err := windows.UTF16PtrFromString(p)
	if err != nil {
		return true
	}
	var fd windows.Win32finddata
	h, err := windows.FindFirstFile(name, &fd)
	if err != nil {
		return true
	}
	_ = windows.FindClose(h)
	return fd.FileAttributes&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 && fd.Reserved0 == ioReparseTagAppExecLink
}

// aboutOf names a configured shell for the model.
func aboutOf(s shell) string {
	if s.kind == powerShell {
		return filepath.Base(s.path) + " (PowerShell syntax, not bash)"
	}
	return filepath.Base(s.path) + " -c"
}

// describe is the tool's description, which the model reads: it names the
// shell, since on Windows it is not always bash.
func describe(s shell) string {
	return "Run a command with " + s.about + " in the working directory. Output lines stream as progress; the result holds the output and the exit code. The command and everything it starts run in a Job Object: on timeout or cancellation the whole process tree is killed."
}

// commandHelp is the description of the command argument.
func commandHelp(s shell) string {
	if s.kind == powerShell {
		return "The PowerShell command, run in the working directory."
	}
	return "The command, run as bash -c in the working directory."
}

// decodeOutput returns the command's output as UTF-8. Valid UTF-8 (Git's
// bash, PowerShell told to write UTF-8, a UTF-8 console) passes as it
// came; anything else is taken as the console's output code page (the
// OEM code page without a console) and converted with
// MultiByteToWideChar.
func decodeOutput(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	cp, err := windows.GetConsoleOutputCP()
	if err != nil || cp == 0 {
		cp = oemCP()
	}
	return decodeFrom(cp, b)
}

// decodeFrom converts b from the code page cp to UTF-8 (b as it is when cp
// is UTF-8 or unknown, or the conversion fails).
func decodeFrom(cp uint32, b []byte) []byte {
	if len(b) == 0 || cp == cpUTF8 || cp == 0 {
		return b
	}
	n, err := windows.MultiByteToWideChar(cp, 0, &b[0], int32(len(b)), nil, 0)
	if err != nil || n <= 0 {
		return b
	}
	w := make([]uint16, n)
	if _, err := windows.MultiByteToWideChar(cp, 0, &b[0], int32(len(b)), &w[0], n); err != nil {
		return b
	}
	return []byte(string(utf16.Decode(w)))
}

// cpUTF8 is the UTF-8 code page.
const cpUTF8 = 65001

var procGetOEMCP = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetOEMCP")

// oemCP is the OEM code page, the one a console program writes in when no
// console says otherwise (0 when it cannot be read).
func oemCP() uint32 {
	if procGetOEMCP.Find() != nil {
		return 0
	}
	r, _, _ := procGetOEMCP.Call()
	return uint32(r)
}
