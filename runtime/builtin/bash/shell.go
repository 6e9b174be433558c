package bash

import (
	"encoding/base64"
	"path/filepath"
	"strings"
	"unicode/utf16"
)

// shellKind is how a shell takes its command.
type shellKind int

const (
	// posixShell takes `-c <command>` (bash, sh, Git for Windows' bash).
	posixShell shellKind = iota
	// powerShell takes the command UTF-16LE and base64 encoded
	// (-EncodedCommand), which no quoting of the command line can alter.
	powerShell
)

// shell is the program the bash tool runs its command with, resolved once
// when the tool is made.
type shell struct {
	path string
	kind shellKind
	// about names the shell for the model in the tool's description
	// ("bash -c" on Unix; on Windows, where it is not always bash, which).
	about string
}

// kindOf says how the program named path takes its command: pwsh and
// powershell by -EncodedCommand, anything else by -c.
func kindOf(path string) shellKind {
	base := strings.ToLower(filepath.Base(path))
	base = strings.TrimSuffix(base, ".exe")
	if base == "pwsh" || base == "powershell" {
		return powerShell
	}
	return posixShell
}

// args returns the command line arguments that run command.
func (s shell) args(command string) []string {
	if s.kind == powerShell {
		// Progress records would reach the pipe as CLIXML; output as UTF-8
		// spares the code page.
		script := "$ProgressPreference = 'SilentlyContinue'; [Console]::OutputEncoding = [System.Text.Encoding]::UTF8; " + command
		u := utf16.Encode([]rune(script))
		b := make([]byte, 2*len(u))
		for i, c := range u {
			b[2*i], b[2*i+1] = byte(c), byte(c>>8)
		}
		return []string{"-NoProfile", "-NonInteractive", "-EncodedCommand", base64.StdEncoding.EncodeToString(b)}
	}
	return []string{"-c", command}
}
