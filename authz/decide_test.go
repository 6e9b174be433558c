package authz_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

type want struct {
	allowed, needs bool
	code           string
	capab          authz.Capability
	msg            string // substring of Message
}

func allowed(c authz.Capability) want { return want{allowed: true, capab: c} }
func hard(c authz.Capability, msg string) want {
	return want{code: authz.ReasonHardConstraint, capab: c, msg: msg}
}
func capDenied(c authz.Capability, msg string) want {
	return want{code: authz.ReasonCapability, capab: c, msg: msg}
}
func ruleDenied(c authz.Capability) want {
	return want{code: authz.ReasonRuleDeny, capab: c, msg: "permission rule"}
}
func unavailable(c authz.Capability) want {
	return want{code: authz.ReasonApprovalUnavailable, capab: c, msg: "approval unavailable"}
}
func needsApproval(c authz.Capability) want {
	return want{needs: true, code: authz.ReasonApprovalRequired, capab: c, msg: "approval required: "}
}

func args(kv ...any) json.RawMessage {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func rules(specs ...string) []authz.Rule {
	var out []authz.Rule
	for _, s := range specs {
		action, tool, _ := strings.Cut(s, " ")
		out = append(out, authz.Rule{Tool: tool, Action: authz.Action(action)})
	}
	return out
}

func patch(lines ...string) json.RawMessage {
	return args("patch", "*** Begin Patch\n"+strings.Join(lines, "\n")+"\n*** End Patch\n")
}

func checkDecision(t *testing.T, name string, got authz.Decision, w want) {
	t.Helper()
	if got.Allowed != w.allowed || got.NeedsApproval != w.needs || got.ReasonCode != w.code || got.Capability != w.capab {
		t.Errorf("%s: Decide = %+v\nwant allowed=%v needs=%v code=%q capability=%q", name, got, w.allowed, w.needs, w.code, w.capab)
		return
	}
	if w.msg != "" && !strings.Contains(got.Message, w.msg) {
		t.Errorf("%s: Message = %q, want it to contain %q", name, got.Message, w.msg)
	}
	if w.code == authz.ReasonHardConstraint && !strings.HasPrefix(got.Message, "hard constraint: ") {
		t.Errorf("%s: Message = %q, want the prefix %q", name, got.Message, "hard constraint: ")
	}
	if got.Message == "" {
		t.Errorf("%s: empty Message", name)
	}
}

// TestDecideMatrix is the decision matrix: source x tier x tool x rules x path.
func TestDecideMatrix(t *testing.T) {
	f := newFixture(t, t.TempDir())
	mcpAuth, err := authz.MCPClientAuthority(clientID, principal)
	if err != nil {
		t.Fatal(err)
	}
	owner, _ := authz.OwnerAuthority(principal)
	ownerNI := owner
	ownerNI.Interaction = authz.InteractionNonInteractive
	agent := authz.Authority{SpeakerKind: "agent", SpeakerID: "agent/sub", SpeakerDisplay: "Sub agent",
		PrincipalID: principal, Tier: authz.TierOwner, Interaction: authz.InteractionNonInteractive}
	peer := authz.Authority{SpeakerKind: "peer", SpeakerID: "peer/1", SpeakerDisplay: "Peer",
		PrincipalID: principal, Tier: authz.TierPaired, Interaction: authz.InteractionInteractive}
	forged := mcpAuth
	forged.Tier = authz.TierOwner

	wd := []string{f.work, f.work2}
	type row struct {
		name   string
		source string
		mode   string
		auth   authz.Authority
		rules  []authz.Rule
		dirs   []string
		tool   string
		args   json.RawMessage
		want   want
	}
	const (
		mcp, spawn, cli = authz.SourceMCP, authz.SourceAgentSpawn, authz.SourceCLI
		ask, bypass     = authz.ModeAsk, authz.ModeBypass
	)
	var (
		exec   = authz.CapProcessExec
		fsw    = authz.CapFSWrite
		fsr    = authz.CapFSRead
		memr   = authz.CapMemoryRead
		mema   = authz.CapMemorySourceAppend
		memp   = authz.CapMemoryTrustedPromote
		net    = authz.CapNetworkSend
		rtctl  = authz.CapRuntimeControl
		allowW = rules("allow write", "allow edit", "allow apply_patch")
	)
	// A trailing dot or space is protected as the name it aliases on
	// Unix, and refused before the walk on Windows.
	trailing := "protected"
	if onWindows {
		trailing = "cannot be resolved"
	}
	rows := []row{
		// --- source mcp, paired tier: risky and worktree tools are hard-denied before anything else.
		{"mcp bash", mcp, ask, mcpAuth, nil, wd, "bash", args("command", "ls"), hard(exec, "bash is not allowed for source mcp")},
		{"mcp bash allow rule bypass", mcp, bypass, mcpAuth, rules("allow bash", "allow *"), wd, "bash", args("command", "ls"), hard(exec, "bash is not allowed")},
		{"mcp BASH", mcp, ask, mcpAuth, nil, wd, "BASH", args("command", "ls"), hard(exec, "BASH is not allowed")},
		{"mcp exec", mcp, ask, mcpAuth, nil, wd, "exec", nil, hard(exec, "exec is not allowed")},
		{"mcp shell", mcp, ask, mcpAuth, nil, wd, "shell", nil, hard(exec, "shell")},
		{"mcp execute_code", mcp, ask, mcpAuth, nil, wd, "execute_code", args("code", "1"), hard(exec, "execute_code")},
		{"mcp process", mcp, ask, mcpAuth, nil, wd, "process", nil, hard(exec, "process")},
		{"mcp worktree_create", mcp, ask, mcpAuth, nil, wd, "worktree_create", nil, hard(fsw, "worktree_create is not allowed")},
		{"mcp worktree", mcp, ask, mcpAuth, nil, wd, "worktree", nil, hard(exec, "worktree is not allowed")},
		// --- source mcp: writes are checked as hard constraints, then the tier still lacks fs.write.
		{"mcp write inside", mcp, ask, mcpAuth, nil, wd, "write", args("path", "notes.txt", "content", "x"), capDenied(fsw, "authority tier paired does not allow fs.write")},
		{"mcp write inside allow bypass", mcp, bypass, mcpAuth, allowW, wd, "write", args("path", "notes.txt"), capDenied(fsw, "does not allow fs.write")},
		{"mcp write second workdir", mcp, ask, mcpAuth, nil, wd, "write", args("path", f.work2+"/a"), capDenied(fsw, "fs.write")},
		{"mcp write dotdot", mcp, ask, mcpAuth, nil, wd, "write", args("path", "../outside/x"), hard(fsw, "outside the working directories")},
		{"mcp write absolute", mcp, ask, mcpAuth, nil, wd, "write", args("path", sysPath("/etc/passwd")), hard(fsw, "write target "+shown(sysPath("/etc/passwd"))+" is outside the working directories")},
		{"mcp write symlink escape", mcp, ask, mcpAuth, nil, wd, "write", args("path", "link/x"), hard(fsw, "write target link/x is outside the working directories")},
		{"mcp write etc link", mcp, ask, mcpAuth, nil, wd, "write", args("path", "etc/cron.d/x"), hard(fsw, "write target etc/cron.d/x is outside the working directories")},
		{"mcp write dangling link", mcp, ask, mcpAuth, nil, wd, "write", args("path", "dangle"), hard(fsw, "outside")},
		{"mcp write .git", mcp, ask, mcpAuth, nil, wd, "write", args("path", ".git/config"), hard(fsw, "protected")},
		{"mcp write .GIT.", mcp, ask, mcpAuth, nil, wd, "write", args("path", ".GIT./hooks/pre-commit"), hard(fsw, trailing)},
		{"mcp write gitlink", mcp, ask, mcpAuth, nil, wd, "write", args("path", "gitlink/hooks/x"), hard(fsw, "protected")},
		{"mcp write .env", mcp, ask, mcpAuth, nil, wd, "write", args("path", "sub/.Env "), hard(fsw, trailing)},
		{"mcp write .bashrc", mcp, ask, mcpAuth, nil, wd, "write", args("path", ".BashRC"), hard(fsw, "protected")},
		{"mcp write no path", mcp, ask, mcpAuth, nil, wd, "write", args("content", "x"), hard(fsw, `needs one non-empty string "path" argument: argument "path" is missing`)},
		{"mcp write empty path", mcp, ask, mcpAuth, nil, wd, "write", args("path", ""), hard(fsw, `needs one non-empty string "path"`)},
		{"mcp write PATH twin", mcp, ask, mcpAuth, nil, wd, "write", json.RawMessage(`{"path":"a.txt","PATH":"/etc/x"}`), hard(fsw, "ambiguous")},
		{"mcp write Path only", mcp, ask, mcpAuth, nil, wd, "write", json.RawMessage(`{"Path":"/etc/x"}`), hard(fsw, "ambiguous")},
		{"mcp write duplicate key", mcp, ask, mcpAuth, nil, wd, "write", json.RawMessage(`{"path":"a.txt","path":"/etc/x"}`), hard(fsw, "appears twice")},
		{"mcp patch PATCH twin", mcp, ask, mcpAuth, nil, wd, "apply_patch", json.RawMessage(`{"patch":"*** Begin Patch\n*** Add File: a\n*** End Patch","Patch":"*** Begin Patch\n*** Add File: /etc/x\n*** End Patch"}`), hard(fsw, "ambiguous")},
		{"mcp write path number", mcp, ask, mcpAuth, nil, wd, "write", args("path", 7), hard(fsw, "path")},
		{"mcp write bad json", mcp, ask, mcpAuth, nil, wd, "write", json.RawMessage(`{"path":`), hard(fsw, "not a valid JSON object")},
		{"mcp write array args", mcp, ask, mcpAuth, nil, wd, "write", json.RawMessage(`["a"]`), hard(fsw, "not a valid JSON object")},
		{"mcp write no workdirs", mcp, ask, mcpAuth, nil, nil, "write", args("path", "/tmp/x"), hard(fsw, "no working directory")},
		{"mcp write loop", mcp, ask, mcpAuth, nil, wd, "write", args("path", "loop1/x"), hard(fsw, "cannot be resolved")},
		{"mcp edit outside", mcp, ask, mcpAuth, nil, wd, "edit", args("path", "rel/x"), hard(fsw, "outside")},
		{"mcp Write outside", mcp, ask, mcpAuth, nil, wd, "Write", args("path", sysPath("/etc/x")), hard(exec, "outside")},
		{"mcp patch inside", mcp, ask, mcpAuth, nil, wd, "apply_patch", patch("*** Add File: a.txt", "+x", "*** Update File: sub/file.txt", "-x", "+y", "*** Delete File: old.txt"), capDenied(fsw, "fs.write")},
		{"mcp patch one outside", mcp, ask, mcpAuth, nil, wd, "apply_patch", patch("*** Add File: a.txt", "+x", "*** Add File: ../outside/b.txt", "+y"), hard(fsw, "outside")},
		{"mcp patch move outside", mcp, ask, mcpAuth, nil, wd, "apply_patch", patch("*** Update File: a.txt", "*** Move to: link/a.txt"), hard(fsw, "outside")},
		{"mcp patch delete dangerous", mcp, ask, mcpAuth, nil, wd, "apply_patch", patch("*** Delete File: .git/HEAD"), hard(fsw, "protected")},
		{"mcp patch malformed", mcp, ask, mcpAuth, nil, wd, "apply_patch", args("patch", "*** Add File: a\n+x"), hard(fsw, "cannot be checked")},
		{"mcp patch no ops", mcp, ask, mcpAuth, nil, wd, "apply_patch", patch(), hard(fsw, "no file operations")},
		{"mcp patch missing", mcp, ask, mcpAuth, nil, wd, "apply_patch", args("diff", "x"), hard(fsw, `"patch"`)},
		// --- source mcp: capability check.
		{"mcp read", mcp, ask, mcpAuth, nil, wd, "read", args("path", "a"), capDenied(fsr, "authority tier paired does not allow fs.read")},
		{"mcp glob", mcp, ask, mcpAuth, rules("allow glob"), wd, "glob", args("pattern", "*"), capDenied(fsr, "fs.read")},
		{"mcp memory_promote", mcp, ask, mcpAuth, rules("allow memory_promote"), wd, "memory_promote", nil, capDenied(memp, "memory.trusted.promote")},
		{"mcp web_fetch", mcp, ask, mcpAuth, nil, wd, "web_fetch", args("url", "https://x"), capDenied(net, "network.send")},
		{"mcp todo", mcp, ask, mcpAuth, nil, wd, "todo_write", nil, capDenied(rtctl, "runtime.control")},
		{"mcp agent", mcp, ask, mcpAuth, nil, wd, "agent", nil, capDenied(exec, "process.exec")},
		{"mcp unclassified", mcp, ask, mcpAuth, rules("allow frobnicate"), wd, "frobnicate", nil, capDenied(exec, "process.exec")},
		{"mcp forged owner tier", mcp, ask, forged, nil, wd, "memory_search", nil, refused("a client authority must be")},
		{"mcp zero authority", mcp, ask, authz.Authority{}, nil, wd, "memory_search", nil, refused("speaker_kind")},
		// --- source mcp: safe tools, rules, approval.
		{"mcp memory_search", mcp, ask, mcpAuth, nil, wd, "memory_search", args("query", "x"), allowed(memr)},
		{"mcp memory_status", mcp, ask, mcpAuth, nil, nil, "memory_status", nil, allowed(memr)},
		{"mcp memory_update", mcp, ask, mcpAuth, nil, wd, "memory_update", args("path", "/notes"), allowed(mema)},
		{"mcp deny rule", mcp, ask, mcpAuth, rules("deny memory_search"), wd, "memory_search", nil, ruleDenied(memr)},
		{"mcp deny glob name", mcp, ask, mcpAuth, rules("deny memory_*"), wd, "memory_get", nil, ruleDenied(memr)},
		{"mcp ask rule", mcp, ask, mcpAuth, rules("ask memory_search"), wd, "memory_search", nil, want{code: authz.ReasonApprovalUnavailable, capab: memr, msg: "approval unavailable: permission rule {tool: memory_search, action: ask} asks before memory_search, and source mcp is non-interactive"}},
		{"mcp ask rule bypass", mcp, bypass, mcpAuth, rules("ask memory_search"), wd, "memory_search", nil, unavailable(memr)},
		{"mcp ask beats allow", mcp, ask, mcpAuth, rules("allow memory_get", "ask memory_get"), wd, "memory_get", nil, unavailable(memr)},
		{"mcp deny beats ask and allow", mcp, ask, mcpAuth, rules("allow memory_get", "ask memory_get", "deny memory_get"), wd, "memory_get", nil, ruleDenied(memr)},
		{"mcp deny pattern", mcp, ask, mcpAuth, rules(`deny memory_search({"query":"secret"})`), wd, "memory_search", args("query", "secret"), ruleDenied(memr)},
		{"mcp deny pattern other args", mcp, ask, mcpAuth, rules(`deny memory_search({"query":"secret"})`), wd, "memory_search", args("query", "public"), allowed(memr)},
		{"mcp malformed rule", mcp, ask, mcpAuth, rules("allow memory_search", "allow bash("), wd, "memory_search", nil, refused("invalid permission rule")},
		{"mcp owner authority misuse", mcp, ask, owner, nil, wd, "write", args("path", "a.txt"), unavailable(fsw)},
		{"mcp owner authority bypass", mcp, bypass, owner, nil, wd, "write", args("path", "a.txt"), unavailable(fsw)},
		{"mcp owner authority bash", mcp, bypass, owner, rules("allow bash"), wd, "bash", args("command", "ls"), hard(exec, "bash")},
		// --- source agent_spawn with an owner-tier agent: same hard constraints; allow rules can open writes inside.
		{"spawn bash", spawn, bypass, agent, rules("allow *"), wd, "bash", args("command", "ls"), hard(exec, "bash is not allowed for source agent_spawn")},
		{"spawn worktree", spawn, ask, agent, nil, wd, "worktree_add", nil, hard(fsw, "worktree_add")},
		{"spawn write inside", spawn, ask, agent, nil, wd, "write", args("path", "a.txt"), unavailable(fsw)},
		{"spawn write inside allow", spawn, ask, agent, allowW, wd, "write", args("path", "new/dir/a.txt"), allowed(fsw)},
		{"spawn write via inside link allow", spawn, ask, agent, allowW, wd, "write", args("path", "ok/b.txt"), allowed(fsw)},
		{"spawn write outside allow", spawn, ask, agent, allowW, wd, "write", args("path", "link/a.txt"), hard(fsw, "outside")},
		{"spawn write dangerous allow", spawn, ask, agent, allowW, wd, "edit", args("path", "sub/.zshrc"), hard(fsw, "protected")},
		{"spawn patch allow", spawn, ask, agent, allowW, wd, "apply_patch", patch("*** Update File: sub/file.txt", "*** Move to: sub/moved.txt"), allowed(fsw)},
		{"spawn patch escape allow", spawn, ask, agent, allowW, wd, "apply_patch", patch("*** Update File: sub/file.txt", "*** Move to: etc/passwd"), hard(fsw, "apply_patch target etc/passwd is outside the working directories")},
		{"spawn read anywhere", spawn, ask, agent, nil, wd, "read", args("path", sysPath("/etc/hostname")), allowed(fsr)},
		{"spawn web_fetch", spawn, ask, agent, nil, wd, "web_fetch", nil, unavailable(net)},
		{"spawn web_fetch allow", spawn, ask, agent, rules("allow web_fetch"), wd, "web_fetch", nil, allowed(net)},
		{"spawn paired agent write", spawn, ask, mcpAuth, allowW, wd, "write", args("path", "a.txt"), refused("an MCP client speaks with source")},
		// --- unknown or empty source: treated like mcp (fail closed).
		{"empty source bash", "", bypass, owner, nil, wd, "bash", args("command", "ls"), refused("source \"\" is not")},
		{"unknown source write", "web", bypass, owner, nil, wd, "write", args("path", "/etc/x"), refused("source \"web\" is not")},
		{"unknown source approval", "web", bypass, owner, nil, wd, "write", args("path", "a"), refused("source \"web\" is not")},
		{"CLI upper case source", "CLI", bypass, owner, nil, wd, "bash", args("command", "ls"), refused("source \"CLI\" is not")},
		// --- source cli, interactive owner: no hard constraints; approval.
		{"cli bash ask", cli, ask, owner, nil, wd, "bash", args("command", "ls"), needsApproval(exec)},
		{"cli bash bypass", cli, bypass, owner, nil, wd, "bash", args("command", "ls"), allowed(exec)},
		{"cli bash unknown mode", cli, "yolo", owner, nil, wd, "bash", args("command", "ls"), refused("permission mode \"yolo\"")},
		{"cli write outside", cli, ask, owner, nil, wd, "write", args("path", sysPath("/etc/x")), needsApproval(fsw)},
		{"cli write .git bypass", cli, bypass, owner, nil, wd, "write", args("path", ".git/config"), hard(fsw, "a protected directory")},
		{"cli worktree", cli, ask, owner, nil, wd, "worktree_add", nil, needsApproval(fsw)},
		{"cli read", cli, ask, owner, nil, wd, "read", args("path", sysPath("/etc/hostname")), allowed(fsr)},
		{"cli todo", cli, ask, owner, nil, wd, "todo_write", nil, allowed(rtctl)},
		{"cli ask rule bypass", cli, bypass, owner, rules("ask bash"), wd, "bash", args("command", "ls"), want{needs: true, code: authz.ReasonApprovalRequired, capab: exec, msg: "asks before bash"}},
		{"cli ask rule safe tool", cli, ask, owner, rules("ask read"), wd, "read", args("path", "a"), needsApproval(fsr)},
		{"cli deny rule", cli, bypass, owner, rules("deny bash(rm:*)"), wd, "bash", args("command", "rm -rf /"), ruleDenied(exec)},
		{"cli allow prefix", cli, ask, owner, rules("allow bash(git status:*)"), wd, "bash", args("command", "  git   status --short "), allowed(exec)},
		{"cli allow prefix chained", cli, ask, owner, rules("allow bash(git status:*)"), wd, "bash", args("command", "git status; rm -rf /"), needsApproval(exec)},
		{"cli deny segment", cli, ask, owner, rules("allow bash(git status:*)", "deny bash(rm:*)"), wd, "bash", args("command", "git status && rm -rf x"), ruleDenied(exec)},
		{"cli deny read path", cli, ask, owner, rules("deny read(" + f.outside + "/*)"), wd, "read", args("path", "link/secret"), ruleDenied(fsr)},
		{"cli malformed rule", cli, bypass, owner, rules("allow bash", "maybe read"), wd, "read", args("path", "a"), refused("invalid permission rule")},
		// --- cli, other speakers.
		{"cli owner non-interactive", cli, bypass, ownerNI, nil, wd, "bash", args("command", "ls"), want{code: authz.ReasonApprovalUnavailable, capab: exec, msg: "approval unavailable: bash needs approval, and speaker owner is non-interactive"}},
		{"cli owner non-interactive ask rule", cli, ask, ownerNI, rules("ask read"), wd, "read", nil, unavailable(fsr)},
		{"cli owner non-interactive safe", cli, ask, ownerNI, nil, wd, "read", nil, allowed(fsr)},
		{"cli paired interactive safe", cli, ask, peer, nil, wd, "memory_search", nil, refused("source \"cli\" is only for the owner")},
		{"cli paired interactive read", cli, bypass, peer, nil, wd, "read", nil, refused("source \"cli\" is only for the owner")},
		{"cli paired interactive ask", cli, bypass, peer, rules("ask memory_search"), wd, "memory_search", nil, refused("source \"cli\" is only for the owner")},
		{"cli mcp authority", cli, bypass, mcpAuth, rules("ask memory_search"), wd, "memory_search", nil, refused("source \"cli\" is only for the owner")},
	}
	if onWindows {
		hosts := etcDir + `\hosts`
		startup := `AppData\Roaming\Microsoft\Windows\Start Menu\Programs\Startup\evil.bat`
		rows = append(rows, []row{
			// The Windows path forms: outside, protected, or refused as unresolvable.
			{"mcp write hosts", mcp, ask, mcpAuth, nil, wd, "write", args("path", hosts), hard(fsw, "write target "+shown(hosts)+" is outside the working directories")},
			{"mcp write backslash dotdot", mcp, ask, mcpAuth, nil, wd, "write", args("path", `..\outside\x`), hard(fsw, "outside")},
			{"mcp write other drive", mcp, ask, mcpAuth, nil, wd, "write", args("path", `Z:\x`), hard(fsw, "outside")},
			{"mcp write .GIT backslash", mcp, ask, mcpAuth, nil, wd, "write", args("path", `.GIT\config`), hard(fsw, "protected")},
			{"mcp write .Env backslash", mcp, ask, mcpAuth, nil, wd, "write", args("path", `sub\.Env`), hard(fsw, "protected")},
			{"mcp write git index allocation", mcp, ask, mcpAuth, nil, wd, "write", args("path", `.git::$INDEX_ALLOCATION\config`), hard(fsw, "cannot be resolved")},
			{"mcp write stream", mcp, ask, mcpAuth, nil, wd, "write", args("path", `notes.txt:evil`), hard(fsw, "cannot be resolved")},
			{"mcp write CON", mcp, ask, mcpAuth, nil, wd, "write", args("path", `CON`), hard(fsw, "cannot be resolved")},
			{"mcp write nul.txt", mcp, ask, mcpAuth, nil, wd, "write", args("path", `sub\nul.txt`), hard(fsw, "cannot be resolved")},
			{"mcp write trailing dot", mcp, ask, mcpAuth, nil, wd, "write", args("path", `.env.`), hard(fsw, "cannot be resolved")},
			{"mcp write drive-relative", mcp, ask, mcpAuth, nil, wd, "write", args("path", `C:x`), hard(fsw, "cannot be resolved")},
			{"mcp write UNC", mcp, ask, mcpAuth, nil, wd, "write", args("path", `\\server\share\x`), hard(fsw, "cannot be resolved")},
			{"mcp write device path", mcp, ask, mcpAuth, nil, wd, "write", args("path", `\\?\`+f.work+`\x`), hard(fsw, "cannot be resolved")},
			{"mcp write rooted", mcp, ask, mcpAuth, nil, wd, "write", args("path", `\x`), hard(fsw, "cannot be resolved")},
			{"mcp write Startup", mcp, ask, mcpAuth, nil, wd, "write", args("path", startup), hard(fsw, "protected directory")},
			{"mcp write PowerShell profile", mcp, ask, mcpAuth, nil, wd, "write", args("path", `Documents\WindowsPowerShell\profile.ps1`), hard(fsw, "protected")},
			{"mcp patch backslash outside", mcp, ask, mcpAuth, nil, wd, "apply_patch", patch("*** Add File: sub\\a.txt", "+x", "*** Add File: ..\\outside\\b.txt", "+y"), hard(fsw, "outside")},
			{"mcp patch stream", mcp, ask, mcpAuth, nil, wd, "apply_patch", patch("*** Update File: sub\\file.txt", "*** Move to: sub\\file.txt:evil"), hard(fsw, "cannot be resolved")},
			// Inside, in any letter case and either slash: allow rules open it.
			{"spawn write upper case work dir allow", spawn, ask, agent, allowW, wd, "write", args("path", strings.ToUpper(f.work)+`\new.txt`), allowed(fsw)},
			{"spawn patch backslash allow", spawn, ask, agent, allowW, wd, "apply_patch", patch("*** Add File: sub\\new.txt", "+x", "*** Update File: sub/file.txt", "-x", "+y"), allowed(fsw)},
			{"spawn write profile allow", spawn, ask, agent, allowW, wd, "write", args("path", `sub\Microsoft.PowerShell_profile.ps1`), hard(fsw, "a protected file")},
			{"spawn write Startup allow", spawn, ask, agent, allowW, wd, "write", args("path", strings.ToLower(startup)), hard(fsw, "protected directory")},
			{"cli write .Git bypass", cli, bypass, owner, nil, wd, "write", args("path", `.Git\hooks\pre-commit`), hard(fsw, "a protected directory")},
			{"cli write Startup bypass", cli, bypass, owner, nil, wd, "write", args("path", startup), hard(fsw, "a protected directory")},
			{"cli deny Remove-Item any case", cli, bypass, owner, rules("deny bash(Remove-Item *)"), wd, "bash", args("command", "remove-item x"), ruleDenied(exec)},
		}...)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.name] {
			t.Fatalf("duplicate row name %q", r.name)
		}
		seen[r.name] = true
		if f.skipCall(t, r.name, r.args) {
			continue
		}
		req := authz.Request{Source: r.source, PermissionMode: r.mode, Authority: r.auth, Rules: r.rules, WorkDirs: r.dirs}
		got := decide(t, req, r.tool, r.args)
		checkDecision(t, r.name, got, r.want)
	}
}

// The contract's two example denials of tool_call, word for word where it matters.
func TestDecideContractExamples(t *testing.T) {
	a, _ := authz.MCPClientAuthority(clientID, principal)
	req := authz.Request{Source: authz.SourceMCP, PermissionMode: authz.ModeAsk, Authority: a, WorkDirs: []string{t.TempDir()}}
	if d := decide(t, req, "bash", nil); d.ReasonCode != authz.ReasonHardConstraint || d.Message != "hard constraint: bash is not allowed for source mcp" {
		t.Errorf("bash: %+v", d)
	}
	if d := decide(t, req, "read", nil); d.ReasonCode != authz.ReasonCapability || d.Message != "authority tier paired does not allow fs.read" || d.Capability != authz.CapFSRead {
		t.Errorf("read: %+v", d)
	}
}

// Messages never carry argument values other than paths.
func TestDecideMessageHidesArguments(t *testing.T) {
	owner, _ := authz.OwnerAuthority(principal)
	secret := "sk-THIS-IS-A-SECRET-0123456789"
	req := authz.Request{Source: authz.SourceCLI, PermissionMode: authz.ModeAsk, Authority: owner,
		Rules: rules("deny bash(curl:*)", "ask web_fetch"), WorkDirs: []string{t.TempDir()}}
	for _, c := range []struct {
		tool string
		args json.RawMessage
	}{
		{"bash", args("command", "curl -H 'Authorization: "+secret+"' https://x")},
		{"web_fetch", args("url", "https://x/?key="+secret)},
		{"frobnicate", args("token", secret)},
	} {
		d := decide(t, req, c.tool, c.args)
		if strings.Contains(d.Message, secret) || d.Allowed {
			t.Errorf("Decide(%s) = %+v: leaks the argument or allows", c.tool, d)
		}
	}
	mcp, _ := authz.MCPClientAuthority(clientID, principal)
	d := decide(t, authz.Request{Source: authz.SourceMCP, Authority: mcp}, "bash\x1b[2J\n"+secret+strings.Repeat("x", 100), nil)
	if strings.Contains(d.Message, secret) || strings.ContainsAny(d.Message, "\x1b\n") {
		t.Errorf("hostile tool name echoed raw: %q", d.Message)
	}
}
