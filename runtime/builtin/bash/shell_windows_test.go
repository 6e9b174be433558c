//go:build windows

package bash

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestPickShell: Git for Windows' bash first (never a WSL launcher:
// System32's bash.exe, one under WindowsApps, an app-execution alias),
// then pwsh, then Windows PowerShell; a configured shell wins;
// the description names the shell the model writes for.
func TestPickShell(t *testing.T) {
	env := map[string]string{`SystemRoot`: `C:\Windows`, `ProgramFiles`: `C:\Program Files`, `LOCALAPPDATA`: `C:\Users\u\AppData\Local`}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		name       string
		configured string
		path       map[string]string // what LookPath finds
		files      []string          // what exists
		want       string
		kind       shellKind
		about      string
		links      []string // the app-execution aliases
	}{
		{"configured", `D:\tools\sh.exe`, nil, nil, `D:\tools\sh.exe`, posixShell, "sh.exe -c", nil},
		{"configured pwsh", `pwsh`, nil, nil, `pwsh`, powerShell, "PowerShell syntax", nil},
		{"bash on PATH", "", map[string]string{"bash.exe": `C:\msys64\usr\bin\bash.exe`}, nil, `C:\msys64\usr\bin\bash.exe`, posixShell, "bash -c", nil},
		{"WSL's bash is not it", "", map[string]string{"bash.exe": `C:\Windows\System32\bash.exe`, "pwsh.exe": `C:\pwsh\pwsh.exe`}, nil, `C:\pwsh\pwsh.exe`, powerShell, "pwsh", nil},
		{"beside git", "", map[string]string{"git.exe": `D:\Git\cmd\git.exe`}, []string{`D:\Git\bin\bash.exe`}, `D:\Git\bin\bash.exe`, posixShell, "Git for Windows' bash", nil},
		{"Program Files", "", nil, []string{`C:\Program Files\Git\bin\bash.exe`}, `C:\Program Files\Git\bin\bash.exe`, posixShell, "Git for Windows' bash", nil},
		{"per-user Git", "", nil, []string{`C:\Users\u\AppData\Local\Programs\Git\bin\bash.exe`}, `C:\Users\u\AppData\Local\Programs\Git\bin\bash.exe`, posixShell, "Git for Windows' bash", nil},
		{"pwsh", "", map[string]string{"pwsh.exe": `C:\pwsh\pwsh.exe`, "powershell.exe": `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`}, nil, `C:\pwsh\pwsh.exe`, powerShell, "pwsh", nil},
		{"Windows PowerShell", "", nil, []string{`C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`}, `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`, powerShell, "Windows PowerShell", nil},
		{"nothing found", "", nil, nil, "powershell.exe", powerShell, "Windows PowerShell", nil},
		{"WSL's alias is not it", "", map[string]string{"bash.exe": `C:\Users\u\AppData\Local\Microsoft\WindowsApps\bash.exe`}, []string{`C:\Program Files\Git\bin\bash.exe`}, `C:\Program Files\Git\bin\bash.exe`, posixShell, "Git for Windows' bash", nil},
		{"no Store bash", "", map[string]string{"bash.exe": `C:\Program Files\windowsapps\CanonicalGroupLimited.Ubuntu_2204\bash.exe`, "pwsh.exe": `C:\pwsh\pwsh.exe`}, nil, `C:\pwsh\pwsh.exe`, powerShell, "pwsh", nil},
		{"System32 in other letters", "", map[string]string{"bash.exe": `c:\WINDOWS\system32\bash.exe`, "pwsh.exe": `C:\pwsh\pwsh.exe`}, nil, `C:\pwsh\pwsh.exe`, powerShell, "pwsh", nil},
		{"an alias anywhere", "", map[string]string{"bash.exe": `D:\apps\bash.exe`, "pwsh.exe": `C:\pwsh\pwsh.exe`}, nil, `C:\pwsh\pwsh.exe`, powerShell, "pwsh", []string{`D:\apps\bash.exe`}},
		{"pwsh may be an alias", "", map[string]string{"pwsh.exe": `C:\Users\u\AppData\Local\Microsoft\WindowsApps\pwsh.exe`}, nil, `C:\Users\u\AppData\Local\Microsoft\WindowsApps\pwsh.exe`, powerShell, "pwsh", []string{`C:\Users\u\AppData\Local\Microsoft\WindowsApps\pwsh.exe`}},
	}
	for _, c := range cases {
		look := func(name string) (string, error) {
			if p, ok := c.path[name]; ok {
				return p, nil
			}
			return "", errors.New("not found")
		}
		exists := func(p string) bool {
			for _, f := range c.files {
				if strings.EqualFold(filepath.Clean(f), p) {
					return true
				}
			}
			return false
		}
		appLink := func(p string) bool { return slices.Contains(c.links, p) }
		got := pickShell(c.configured, look, getenv, exists, appLink)
		if got.path != c.want || got.kind != c.kind || !strings.Contains(describe(got), c.about) {
			t.Errorf("%s: pickShell = %+v (%q), want %s kind %d about %q", c.name, got, describe(got), c.want, c.kind, c.about)
		}
	}
}

// TestDecodeFrom: output in a console code page becomes UTF-8; UTF-8 and
// an unknown code page pass as they came.
func TestDecodeFrom(t *testing.T) {
	for _, c := range []struct {
		cp   uint32
		in   string
		want string
	}{
		{437, "caf\x82\r\n", "café\r\n"},
		{850, "\x9b", "ø"},
		{1252, "\xe9t\xe9", "été"},
		{cpUTF8, "\xe9", "\xe9"},
		{0, "\xe9", "\xe9"},
		{437, "", ""},
		{437, "a\x00b", "a\x00b"},
	} {
		if got := string(decodeFrom(c.cp, []byte(c.in))); got != c.want {
			t.Errorf("decodeFrom(%d, %q) = %q, want %q", c.cp, c.in, got, c.want)
		}
	}
}

// TestPowerShellArgs: the command reaches PowerShell whole, UTF-16LE and
// base64 encoded, whatever quotes it holds.
func TestPowerShellArgs(t *testing.T) {
	args := shell{kind: powerShell}.args(`Write-Output "a b" 'c'`)
	if len(args) != 4 || args[2] != "-EncodedCommand" {
		t.Fatalf("args = %q", args)
	}
	if got := (shell{kind: posixShell}).args("echo hi"); len(got) != 2 || got[0] != "-c" || got[1] != "echo hi" {
		t.Errorf("posix args = %q", got)
	}
}

// TestFindShellRefusesTheWSLAlias: the WSL launcher's app-execution alias
// %LOCALAPPDATA%\Microsoft\WindowsApps\bash.exe starts WSL, a Linux machine,
// as System32's bash.exe does: a bash.exe found on PATH under a WindowsApps
// directory is never the shell. Wine cannot make the alias's reparse tag
// (IO_REPARSE_TAG_APPEXECLINK), so a plain file at that path stands in for
// it here: the path rule is what this checks under Wine; the tag rule
// (isAppExecLink) holds on a real Windows runner, where the alias is a
// reparse point.
func TestFindShellRefusesTheWSLAlias(t *testing.T) {
	local := t.TempDir()
	for _, dir := range []string{`Microsoft\WindowsApps`, `Microsoft\windowsapps\sub`} {
		apps := filepath.Join(local, dir)
		if err := os.MkdirAll(apps, 0o755); err != nil {
			t.Fatal(err)
		}
		alias := filepath.Join(apps, "bash.exe")
		if err := os.WriteFile(alias, []byte("MZ"), 0o755); err != nil {
			t.Fatal(err)
		}
		t.Setenv("LOCALAPPDATA", local)
		t.Setenv("PATH", apps)
		if got := findShell(""); strings.EqualFold(got.path, alias) {
			t.Errorf("findShell with %s on PATH = %+v: the WSL launcher's alias", alias, got)
		}
	}
}

// TestPickShellWithoutSystemRoot: an environment without SystemRoot (a
// client that passes its server a bare one) still keeps System32's WSL
// launcher from being the shell: the system directory is asked for too.
func TestPickShellWithoutSystemRoot(t *testing.T) {
	system, err := windows.GetSystemDirectory()
	if err != nil {
		t.Fatal(err)
	}
	wsl := filepath.Join(system, "bash.exe")
	look := func(name string) (string, error) {
		switch name {
		case "bash.exe":
			return wsl, nil
		case "pwsh.exe":
			return `C:\pwsh\pwsh.exe`, nil
		}
		return "", errors.New("not found")
	}
	got := pickShell("", look, func(string) string { return "" }, func(string) bool { return false }, func(string) bool { return false })
	if got.path == wsl {
		t.Errorf("pickShell without SystemRoot picked %s, the WSL launcher", wsl)
	}
}
