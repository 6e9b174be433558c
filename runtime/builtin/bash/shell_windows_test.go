//go:build windows

package bash

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestPickShell: Git for Windows' bash first (never System32's WSL
// launcher), then pwsh, then Windows PowerShell; a configured shell wins;
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
	}{
		{"configured", `D:\tools\sh.exe`, nil, nil, `D:\tools\sh.exe`, posixShell, "sh.exe -c"},
		{"configured pwsh", `pwsh`, nil, nil, `pwsh`, powerShell, "PowerShell syntax"},
		{"bash on PATH", "", map[string]string{"bash.exe": `C:\msys64\usr\bin\bash.exe`}, nil, `C:\msys64\usr\bin\bash.exe`, posixShell, "bash -c"},
		{"WSL's bash is not it", "", map[string]string{"bash.exe": `C:\Windows\System32\bash.exe`, "pwsh.exe": `C:\pwsh\pwsh.exe`}, nil, `C:\pwsh\pwsh.exe`, powerShell, "pwsh"},
		{"beside git", "", map[string]string{"git.exe": `D:\Git\cmd\git.exe`}, []string{`D:\Git\bin\bash.exe`}, `D:\Git\bin\bash.exe`, posixShell, "Git for Windows' bash"},
		{"Program Files", "", nil, []string{`C:\Program Files\Git\bin\bash.exe`}, `C:\Program Files\Git\bin\bash.exe`, posixShell, "Git for Windows' bash"},
		{"per-user Git", "", nil, []string{`C:\Users\u\AppData\Local\Programs\Git\bin\bash.exe`}, `C:\Users\u\AppData\Local\Programs\Git\bin\bash.exe`, posixShell, "Git for Windows' bash"},
		{"pwsh", "", map[string]string{"pwsh.exe": `C:\pwsh\pwsh.exe`, "powershell.exe": `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`}, nil, `C:\pwsh\pwsh.exe`, powerShell, "pwsh"},
		{"Windows PowerShell", "", nil, []string{`C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`}, `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`, powerShell, "Windows PowerShell"},
		{"nothing found", "", nil, nil, "powershell.exe", powerShell, "Windows PowerShell"},
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
		got := pickShell(c.configured, look, getenv, exists)
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
