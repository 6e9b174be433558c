package shell

import (
	"encoding/base64"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tt := range []struct {
		in, posix, powershell string
	}{
		{"/usr/local/bin/openprogram", "/usr/local/bin/openprogram", "/usr/local/bin/openprogram"},
		{"OPENPROGRAM_HOME=/a/b:c", "OPENPROGRAM_HOME=/a/b:c", "OPENPROGRAM_HOME=/a/b:c"},
		{`C:\Users\ann\.openprogram\mcp_token`, `'C:\Users\ann\.openprogram\mcp_token'`, `C:\Users\ann\.openprogram\mcp_token`},
		{"", "''", "''"},
		{"a b", "'a b'", "'a b'"},
		{`C:\Users\Ann Lee\token`, `'C:\Users\Ann Lee\token'`, `'C:\Users\Ann Lee\token'`},
		{"${TOKEN}", "'${TOKEN}'", "'${TOKEN}'"},
		{"$env:USERNAME", "'$env:USERNAME'", "'$env:USERNAME'"},
		{"it's", `'it'\''s'`, "'it''s'"},
		{"it\u2019s", "'it\u2019s'", "'it\u2019\u2019s'"},
		{"a`b", "'a`b'", "'a`b'"},
		{"naïve", "'naïve'", "'naïve'"},
		{"a;b", "'a;b'", "'a;b'"},
		{"@args", "'@args'", "'@args'"},
		// PowerShell breaks a bare word that starts with - in two at its
		// first . (and, after --, at its first :), even for a program.
		{"-DFOO=foo.c", "-DFOO=foo.c", "'-DFOO=foo.c'"},
		{`--config=C:\x.json`, `'--config=C:\x.json'`, `'--config=C:\x.json'`},
		{"-v:diag", "-v:diag", "'-v:diag'"},
		{"--log-level", "--log-level", "--log-level"},
		{"a-b.c", "a-b.c", "a-b.c"},
	} {
		if got := POSIX.Quote(tt.in); got != tt.posix {
			t.Errorf("POSIX.Quote(%q) = %s, want %s", tt.in, got, tt.posix)
		}
		if got := PowerShell.Quote(tt.in); got != tt.powershell {
			t.Errorf("PowerShell.Quote(%q) = %s, want %s", tt.in, got, tt.powershell)
		}
	}
}

func TestStatements(t *testing.T) {
	path := `C:\Users\Ann's PC\.openprogram\mcp_token`
	tokenPath := []string{"openprogram", "mcp", "token", "path"}
	for _, tt := range []struct {
		sx        Syntax
		name, got string
		want      string
	}{
		{POSIX, "file", POSIX.Export("T", POSIX.FileContent(POSIX.Quote(path))), `export T="$(cat 'C:\Users\Ann'\''s PC\.openprogram\mcp_token')"`},
		{PowerShell, "file", PowerShell.Export("T", PowerShell.FileContent(PowerShell.Quote(path))),
			`$env:T = (Get-Content -Raw -LiteralPath 'C:\Users\Ann''s PC\.openprogram\mcp_token').Trim()`},
		{POSIX, "output", POSIX.Export("T", POSIX.FileContent(POSIX.Output(tokenPath))), `export T="$(cat "$(openprogram mcp token path)")"`},
		{PowerShell, "output", PowerShell.Export("T", PowerShell.FileContent(PowerShell.Output(tokenPath))),
			`$env:T = (Get-Content -Raw -LiteralPath (openprogram mcp token path)).Trim()`},
		{POSIX, "placeholder", POSIX.Export("K", POSIX.Quote("<key>")), `export K='<key>'`},
		{PowerShell, "placeholder", PowerShell.Export("K", PowerShell.Quote("<key>")), `$env:K = '<key>'`},
		{PowerShell, "call", PowerShell.Join([]string{`C:\Program Files\claude.exe`, "mcp", "add"}), `& 'C:\Program Files\claude.exe' mcp add`},
		{POSIX, "call", POSIX.Join([]string{"/opt/my apps/claude", "mcp"}), `'/opt/my apps/claude' mcp`},
	} {
		if tt.got != tt.want {
			t.Errorf("%d %s: %s, want %s", tt.sx, tt.name, tt.got, tt.want)
		}
	}
}

// words are the arguments the round trips give a shell, hard cases all.
var words = []string{"plain", "two words", "it's", "it\u2019s", "$HOME", "$env:PATH", "`x`", "a\nb", "", `C:\a b\c`, "@(1)", "a;b", "-foo=bar.baz", "-x.y"}

// A joined command line gives a POSIX shell back the words it was made of.
func TestJoinRoundTripPOSIX(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH: the round trip cannot be checked")
	}
	line := POSIX.Join(append([]string{"printf", `%s\n`}, words...))
	out, err := exec.Command(sh, "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c %s: %v", line, err)
	}
	if got, want := string(out), strings.Join(words, "\n")+"\n"; got != want {
		t.Errorf("sh -c %s printed %q, want %q", line, got, want)
	}
}

// A PowerShell command line gives PowerShell back the words it was made
// of. It runs where pwsh is on PATH (the windows-latest job); not here.
func TestJoinRoundTripPowerShell(t *testing.T) {
	pwsh, err := exec.LookPath("pwsh")
	if err != nil {
		t.Skip("no pwsh on PATH: the round trip runs on the windows-latest job")
	}
	// The words are a command's arguments, as in the printed commands; each
	// comes back as w: and the base64 of its UTF-8 bytes, one a line, so no
	// console code page stands between.
	script := "function f { foreach ($w in $args) { 'w:' + [Convert]::ToBase64String([Text.Encoding]::UTF8.GetBytes($w)) } }; " +
		PowerShell.Join(append([]string{"f"}, words...))
	out, err := exec.Command(pwsh, "-NoProfile", "-NonInteractive", "-Command", script).Output()
	if err != nil {
		t.Fatalf("pwsh -Command %s: %v", script, err)
	}
	var got []string
	for _, line := range strings.Fields(string(out)) {
		b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(line, "w:"))
		if err != nil {
			t.Fatalf("pwsh printed %q, not base64: %v", line, err)
		}
		got = append(got, string(b))
	}
	if !slices.Equal(got, words) {
		t.Errorf("pwsh -Command %s gave back %q, want %q", script, got, words)
	}
}
