package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// psList is words as the PowerShell script writes a table entry's value.
func psList(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", "''") + "'"
	}
	return "@(" + strings.Join(quoted, ", ") + ")"
}

// TestCompletionPowerShellCoversTheGrammar: the PowerShell script is made
// from the same command model as the bash script: every command path with
// its subcommands and flags, and every enum flag's values, that the bash
// script completes are in its tables, quoted as PowerShell strings.
func TestCompletionPowerShellCoversTheGrammar(t *testing.T) {
	env, _ := fresh(t)
	bash := mustCLI(t, env, "completion", "bash")
	ps := mustCLI(t, env, "completion", "powershell")
	if !strings.Contains(ps, "Register-ArgumentCompleter -Native -CommandName openprogram, openprogram.exe -ScriptBlock {") {
		t.Fatalf("the PowerShell script registers no native completer for openprogram and openprogram.exe:\n%s", ps)
	}
	// bash: `    'mcp token') echo 'create path rotate' ;;` (or unquoted words)
	entry := regexp.MustCompile(`(?m)^    ('[^']*'|\S+)\) echo ('[^']*'|\S*) ;;$`)
	unquote := func(s string) string { return strings.Trim(s, "'") }
	checked := 0
	for _, fn := range []string{"_openprogram_commands", "_openprogram_flags", "_openprogram_values"} {
		_, body, _ := strings.Cut(bash, fn+"() {")
		body, _, _ = strings.Cut(body, "\n}\n")
		for _, m := range entry.FindAllStringSubmatch(body, -1) {
			key, words := unquote(m[1]), strings.Fields(unquote(m[2]))
			want := "'" + key + "' = " + psList(words)
			if !strings.Contains(ps, "        "+want+"\n") {
				t.Errorf("the PowerShell script lacks %s (from bash's %s)", want, fn)
			}
			checked++
		}
	}
	if checked < 50 {
		t.Errorf("only %d table entries compared: the bash script's shape changed", checked)
	}
	for _, w := range []string{"'mcp' = @(", "'--client'", "'claude-desktop'", "'powershell'", "'config set' = @("} {
		if !strings.Contains(ps, w) {
			t.Errorf("the PowerShell script lacks %s", w)
		}
	}
}

// TestCompletionPowerShell: the script, loaded into a real pwsh, completes
// commands, subcommands, flags and enum values through TabExpansion2. It
// runs where pwsh is on PATH (the windows-latest job has it); Wine and
// this machine have none.
func TestCompletionPowerShell(t *testing.T) {
	pwsh, err := exec.LookPath("pwsh")
	if err != nil {
		t.Skip("no pwsh on PATH: the PowerShell completion runs on the windows-latest job")
	}
	env, _ := fresh(t)
	script := filepath.Join(t.TempDir(), "openprogram.ps1")
	if err := os.WriteFile(script, []byte(mustCLI(t, env, "completion", "powershell")), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string
		want []string
	}{
		{"openprogram mc", []string{"mcp"}},
		{"openprogram ", []string{"mcp", "config", "completion", "doctor"}},
		{"openprogram.exe mcp token ", []string{"create", "path", "rotate"}},
		{"openprogram mcp install --client co", []string{"codex"}},
		{"openprogram mcp serve --log-", []string{"--log-level", "--log-format", "--log-file"}},
		{"openprogram completion ", []string{"bash", "zsh", "fish", "powershell"}},
		{"openprogram config get model.p", []string{"model.provider"}},
	} {
		prog := ". '" + strings.ReplaceAll(script, "'", "''") + "'; (TabExpansion2 '" + tc.line + "').CompletionMatches | ForEach-Object { $_.CompletionText }"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, pwsh, "-NoProfile", "-NonInteractive", "-Command", prog).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("pwsh: %v\n%s", err, out)
		}
		got := " " + strings.Join(strings.Fields(string(out)), " ") + " "
		for _, w := range tc.want {
			if !strings.Contains(got, " "+w+" ") {
				t.Errorf("completing %q = %s, want it to offer %q", tc.line, got, w)
			}
		}
	}
}
