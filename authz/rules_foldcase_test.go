//go:build windows || darwin

package authz_test

import (
	"strings"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

// TestCommandDenyRulesIgnoreCase: on Windows and macOS a command's letter
// case does not change what runs (PowerShell and cmd read commands and
// their names ignoring case, Git's bash finds rm.exe as RM.EXE, and macOS's
// default file system finds /bin/rm as RM), so deny and
// ask rules for command tools compare ignoring case, and a deny rule is not
// bypassed by writing the command in other letters. Allow rules still
// compare as written: a program's arguments may be case-sensitive
// (git branch -d deletes a merged branch, -D any branch), so an allow rule
// granting more than the owner wrote would be a hole; a command in other
// letters is asked about instead.
func TestCommandDenyRulesIgnoreCase(t *testing.T) {
	owner, _ := authz.OwnerAuthority(principal)
	for _, c := range []struct {
		rule, command, outcome string
	}{
		{"deny bash(Remove-Item *)", "remove-item x", "deny"},
		{"deny bash(Remove-Item *)", "REMOVE-ITEM C:\\w -Recurse", "deny"},
		{"deny bash(rm -rf *)", "RM -RF /c/w", "deny"},
		{"deny bash(rm:*)", "Rm x", "deny"},
		{"deny bash(rm:*)", "echo hi; RM x", "deny"},
		{"deny bash(rm:*)", "SUDO rm x", "deny"},
		{"deny bash(del /s x)", "DEL /S X", "deny"},
		{"ask bash(git push:*)", "git status; GIT PUSH --force", "approval"},
		{"deny shell(format:*)", "FORMAT c:", "deny"},
		{"ask bash(git push:*)", "git status", "allow"},
		{"deny bash(Remove-Item *)", "Get-ChildItem", "approval"},
		// Allow compares as written.
		{"allow bash(git branch -d:*)", "git branch -d topic", "allow"},
		{"allow bash(git branch -d:*)", "git branch -D topic", "approval"},
		{"allow bash(Get-ChildItem)", "get-childitem", "approval"},
		{"allow bash(Get-ChildItem *)", "Get-ChildItem C:\\w", "allow"},
	} {
		// An ask rule shows in bypass mode, where nothing else asks.
		mode := authz.ModeAsk
		if strings.HasPrefix(c.rule, "ask ") {
			mode = authz.ModeBypass
		}
		req := authz.Request{Source: authz.SourceCLI, PermissionMode: mode, Authority: owner, Rules: rules(c.rule)}
		tool := "bash"
		if c.rule == "deny shell(format:*)" {
			tool = "shell"
		}
		d := decide(t, req, tool, args("command", c.command))
		if got := outcome(d); got != c.outcome {
			t.Errorf("rule %q, command %q: got %s, want %s (%s)", c.rule, c.command, got, c.outcome, d.Message)
		}
	}
}
