package authz_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

// TestDecideOwnerProtectedWrites pins the protection every speaker gets, the
// owner's console included: the state directory is never written, whatever
// the rules say, and a dangerous file or directory only when a rule names
// that exact path. An allow rule for the tool, or bypass mode, is not enough.
func TestDecideOwnerProtectedWrites(t *testing.T) {
	f := newFixture(t, t.TempDir())
	// The state directory inside the work tree, as with OPENPROGRAM_HOME=./.openprogram,
	// and one elsewhere under an innocent name, reached through a symlink.
	state := filepath.Join(f.work, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	f.symlink(t, state, filepath.Join(f.work, "statelink"))
	owner, err := authz.OwnerAuthority(principal)
	if err != nil {
		t.Fatal(err)
	}
	ownerNI := owner
	ownerNI.Interaction = authz.InteractionNonInteractive
	fsw := authz.CapFSWrite
	allowW := rules("allow write", "allow edit", "allow apply_patch")
	exact := func(action, tool, p string) []authz.Rule {
		return []authz.Rule{{Tool: tool + "(" + p + ")", Action: authz.Action(action)}}
	}
	type writeCase struct {
		name  string
		mode  string
		auth  authz.Authority
		rules []authz.Rule
		tool  string
		args  []byte
		want  want
	}
	cases := []writeCase{
		{"state dir allow rule", authz.ModeAsk, owner, allowW, "write", args("path", "state/mcp_server_token"), hard(fsw, "state/mcp_server_token is inside a protected directory")},
		{"state dir bypass", authz.ModeBypass, owner, nil, "write", args("path", "state/config.json"), hard(fsw, "protected directory")},
		{"state dir via symlink", authz.ModeAsk, ownerNI, allowW, "edit", args("path", "statelink/config.json"), hard(fsw, "protected directory")},
		{"state dir exact rule", authz.ModeAsk, owner, exact("allow", "write", filepath.Join(state, "config.json")), "write", args("path", "state/config.json"), hard(fsw, "protected directory")},
		{"state dir patch", authz.ModeAsk, owner, allowW, "apply_patch", patch("*** Add File: state/audit_key", "+x"), hard(fsw, "protected directory")},
		{"bashrc allow rule", authz.ModeAsk, owner, allowW, "write", args("path", ".bashrc"), hard(fsw, ".bashrc is a protected file")},
		{"env bypass", authz.ModeBypass, owner, nil, "write", args("path", "sub/.env"), hard(fsw, "a protected file")},
		{"git hook allow rule", authz.ModeAsk, ownerNI, allowW, "write", args("path", ".git/hooks/pre-commit"), hard(fsw, "a protected directory")},
		{"git config bypass", authz.ModeBypass, owner, nil, "edit", args("path", ".git/config"), hard(fsw, "a protected directory")},
		{"git via symlink", authz.ModeBypass, owner, nil, "write", args("path", "gitlink/config"), hard(fsw, "a protected directory")},
		{"env glob rule", authz.ModeAsk, owner, rules("allow write(*)"), "write", args("path", ".env"), hard(fsw, "a protected file")},
		{"env exact rule", authz.ModeAsk, ownerNI, exact("allow", "write", filepath.Join(f.work, ".env")), "write", args("path", ".env"), allowed(fsw)},
		{"env exact relative rule", authz.ModeAsk, ownerNI, exact("allow", "write", ".env"), "write", args("path", ".env"), allowed(fsw)},
		{"git hook exact rule", authz.ModeAsk, ownerNI, exact("allow", "write", ".git/hooks/pre-commit"), "write", args("path", ".git/hooks/pre-commit"), allowed(fsw)},
		{"exact rule other tool", authz.ModeAsk, ownerNI, exact("allow", "edit", ".env"), "write", args("path", ".env"), hard(fsw, "a protected file")},
		{"exact ask rule", authz.ModeAsk, ownerNI, exact("ask", "write", ".env"), "write", args("path", ".env"), hard(fsw, "a protected file")},
		{"patch one exact target", authz.ModeAsk, owner, append(exact("allow", "apply_patch", ".env"), allowW...), "apply_patch", patch("*** Add File: .env", "+x", "*** Add File: .bashrc", "+y"), hard(fsw, ".bashrc is a protected file")},
		// Unchanged: an ordinary file, and a path outside the working
		// directories (the tool refuses it; the owner is asked first).
		{"plain file bypass", authz.ModeBypass, owner, nil, "write", args("path", "sub/new.txt"), allowed(fsw)},
		{"plain file allow", authz.ModeAsk, ownerNI, allowW, "write", args("path", "new.txt"), allowed(fsw)},
		{"outside asks", authz.ModeAsk, owner, nil, "write", args("path", sysPath("/etc/x")), needsApproval(fsw)},
	}
	if onWindows {
		cases = append(cases, []writeCase{
			{"state dir other case", authz.ModeBypass, owner, nil, "write", args("path", `STATE\config.json`), hard(fsw, "protected directory")},
			{"state dir backslash allow rule", authz.ModeAsk, owner, allowW, "edit", args("path", `.\state\audit_key`), hard(fsw, "protected directory")},
			{"env other case bypass", authz.ModeBypass, owner, nil, "write", args("path", `sub\.ENV`), hard(fsw, "a protected file")},
			{"Startup bypass", authz.ModeBypass, owner, nil, "write", args("path", `Start Menu\Programs\Startup\x.cmd`), hard(fsw, "a protected directory")},
			{"profile allow rule", authz.ModeAsk, owner, allowW, "write", args("path", `profile.ps1`), hard(fsw, "profile.ps1 is a protected file")},
			{"env exact rule other case", authz.ModeAsk, ownerNI, exact("allow", "write", `.ENV`), "write", args("path", ".env"), allowed(fsw)},
			{"env exact rule backslash", authz.ModeAsk, ownerNI, exact("allow", "write", f.work+`\sub\.env`), "write", args("path", "sub/.env"), allowed(fsw)},
			{"profile exact rule", authz.ModeAsk, ownerNI, exact("allow", "write", `profile.ps1`), "write", args("path", `Profile.ps1`), allowed(fsw)},
			{"git hook exact rule other file", authz.ModeAsk, ownerNI, exact("allow", "write", `.git\hooks\pre-commit`), "write", args("path", `.git\hooks\post-commit`), hard(fsw, "a protected directory")},
		}...)
	}
	for _, c := range cases {
		if f.skipCall(t, c.name, c.args) {
			continue
		}
		req := authz.Request{Source: authz.SourceCLI, PermissionMode: c.mode, Authority: c.auth, Rules: c.rules,
			WorkDirs: []string{f.work}, StateDir: state}
		checkDecision(t, c.name, decide(t, req, c.tool, c.args), c.want)
	}
}

// TestWriteTarget is the one answer to "may this call write p" that the gate
// and the file tools share.
func TestWriteTarget(t *testing.T) {
	f := newFixture(t, t.TempDir())
	state := filepath.Join(f.outside, "home")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	f.symlink(t, state, filepath.Join(f.work, "home"))
	owner, _ := authz.OwnerAuthority(principal)
	mcpAuth, _ := authz.MCPClientAuthority(clientID, principal)
	envRule := []authz.Rule{{Tool: "write(.env)", Action: authz.ActionAllow}}
	type targetCase struct {
		name   string
		source string
		auth   authz.Authority
		rules  []authz.Rule
		dirs   []string
		p      string
		phrase string // "" when allowed
	}
	cases := []targetCase{
		{"owner plain", authz.SourceCLI, owner, nil, []string{f.work}, "a.txt", ""},
		{"owner state dir as work dir", authz.SourceCLI, owner, nil, []string{state}, "token", authz.PhraseProtectedDir},
		{"owner state dir via link", authz.SourceCLI, owner, nil, []string{f.work}, "home/token", authz.PhraseOutside},
		{"owner state dir inside work dirs", authz.SourceCLI, owner, nil, []string{f.work, state}, "home/token", authz.PhraseProtectedDir},
		{"owner env", authz.SourceCLI, owner, nil, []string{f.work}, ".env", authz.PhraseProtectedFile},
		{"owner env exact rule", authz.SourceCLI, owner, envRule, []string{f.work}, ".env", ""},
		{"mcp env exact rule", authz.SourceMCP, mcpAuth, envRule, []string{f.work}, ".env", authz.PhraseProtectedFile},
		{"owner outside", authz.SourceCLI, owner, nil, []string{f.work}, sysPath("/etc/x"), authz.PhraseOutside},
	}
	if onWindows {
		cases = append(cases, []targetCase{
			{"owner state dir other case", authz.SourceCLI, owner, nil, []string{f.outside}, `HOME\token`, authz.PhraseProtectedDir},
			{"owner env other case", authz.SourceCLI, owner, nil, []string{f.work}, `.Env`, authz.PhraseProtectedFile},
			{"owner env exact rule other case", authz.SourceCLI, owner, envRule, []string{f.work}, `.ENV`, ""},
			{"mcp env exact rule other case", authz.SourceMCP, mcpAuth, envRule, []string{f.work}, `.ENV`, authz.PhraseProtectedFile},
			{"owner stream", authz.SourceCLI, owner, nil, []string{f.work}, `.env:x`, authz.PhraseUnresolvable},
			{"owner device", authz.SourceCLI, owner, nil, []string{f.work}, `con.txt`, authz.PhraseUnresolvable},
			{"owner other drive", authz.SourceCLI, owner, nil, []string{f.work}, `Z:\x`, authz.PhraseOutside},
			{"owner PowerShell profile", authz.SourceCLI, owner, nil, []string{f.work}, `Documents\PowerShell\Modules\m\m.psm1`, authz.PhraseProtectedDir},
		}...)
	}
	for _, c := range cases {
		if f.skipPaths(t, c.name, c.p) {
			continue
		}
		req := authz.Request{Source: c.source, Authority: c.auth, Rules: c.rules, WorkDirs: c.dirs, StateDir: state}
		_, err := speaker(t, req).WriteTarget("write", c.p)
		got := ""
		if pe, ok := err.(*authz.PathError); ok {
			got = pe.Phrase
		} else if err != nil {
			t.Errorf("%s: WriteTarget(%q) error %v is not a *PathError", c.name, c.p, err)
			continue
		}
		if got != c.phrase {
			t.Errorf("%s: WriteTarget(%q) phrase = %q, want %q", c.name, c.p, got, c.phrase)
		}
	}
}
