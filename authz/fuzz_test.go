package authz_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

// fuzzTools are the names FuzzDecideMCP picks from (index), besides free-form names.
var fuzzTools = []string{
	"bash", "exec", "shell", "execute_code", "process", "BASH", "Shell", "worktree", "worktree_create", "WorkTree_rm",
	"write", "edit", "apply_patch", "Write", "EDIT", "Apply_Patch",
	"read", "glob", "grep", "list", "memory_search", "memory_update", "memory_promote", "web_fetch", "todo_write",
	"agent", "frobnicate", "",
}

// independentTargets returns the write targets of a write-like call the way a Go tool
// decoding its arguments into a struct would see them (encoding/json, case-insensitive
// field names, last key wins), and for apply_patch every line that looks like a file
// marker. ok is false when the tool is not write-like.
func independentTargets(tool string, args json.RawMessage) (targets []string, writeLike bool) {
	switch strings.ToLower(tool) {
	case "write", "edit":
		var a struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(args, &a)
		return []string{a.Path}, true
	case "apply_patch":
		var a struct {
			Patch string `json:"patch"`
		}
		_ = json.Unmarshal(args, &a)
		for _, l := range strings.Split(a.Patch, "\n") {
			l = strings.TrimLeft(strings.TrimSuffix(l, "\r"), " \t")
			if !strings.HasPrefix(l, "***") {
				continue
			}
			for _, m := range []string{"File:", "Move to:"} {
				if i := strings.Index(l, m); i >= 0 {
					targets = append(targets, strings.TrimPrefix(l[i+len(m):], " "))
				}
			}
		}
		return targets, true
	}
	return nil, false
}

// independentResolve resolves p with filepath.EvalSymlinks on the deepest prefix that
// resolves; ok is false if a ".." remains in the unresolved rest.
func independentResolve(workDir, p string) (string, bool) {
	full := p
	if !filepath.IsAbs(p) {
		full = workDir + string(filepath.Separator) + p
	}
	vol := filepath.VolumeName(full)
	comps := strings.FieldsFunc(full[len(vol):], func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) })
	for k := len(comps); k >= 0; k-- {
		prefix := vol + string(filepath.Separator) + strings.Join(comps[:k], string(filepath.Separator))
		r, err := filepath.EvalSymlinks(prefix)
		if err != nil {
			continue
		}
		rest := comps[k:]
		if slices.Contains(rest, "..") {
			return "", false
		}
		return filepath.Join(append([]string{r}, rest...)...), true
	}
	return "", false
}

func independentInside(r string, workDirs []string) bool {
	for _, wd := range workDirs {
		w, err := filepath.EvalSymlinks(wd)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(w, r)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

func independentDangerous(r string) bool {
	dirs := []string{".git", ".hg", ".svn", ".vscode", ".idea", ".openprogram", ".claude", ".ssh", ".gnupg"}
	files := []string{".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv",
		".gitconfig", ".gitmodules", ".git-credentials", ".npmrc", ".pypirc", ".netrc", ".mcp.json", ".claude.json", ".env"}
	comps := strings.Split(filepath.ToSlash(r[len(filepath.VolumeName(r)):]), "/")
	for i, c := range comps {
		c = strings.TrimRight(strings.ToLower(c), ". ")
		if slices.Contains(dirs, c) || (i == len(comps)-1 && slices.Contains(files, c)) {
			return true
		}
		if onWindows && strings.ContainsRune(c, ':') { // a stream names another file
			return true
		}
	}
	if onWindows {
		// The autostart places.
		l := strings.ToLower("/" + strings.Join(comps, "/") + "/")
		for _, place := range []string{"/start menu/programs/startup/", "/documents/powershell/", "/documents/windowspowershell/"} {
			if strings.Contains(l, place) {
				return true
			}
		}
		if strings.HasSuffix(l, "profile.ps1/") {
			return true
		}
	}
	return false
}

var pairedCaps = map[authz.Capability]bool{authz.CapReply: true, authz.CapMemoryRead: true, authz.CapMemorySourceAppend: true}

// FuzzDecideMCP: for constrained sources no argument value (and no allow rule) makes a
// risky or worktree tool run, a write lands outside the working directories or on a
// dangerous path, or the paired tier use a capability it does not hold.
func FuzzDecideMCP(f *testing.F) {
	fx := newFixture(f, f.TempDir())
	mcpAuth, err := authz.MCPClientAuthority(clientID, principal)
	if err != nil {
		f.Fatal(err)
	}
	agent := authz.Authority{SpeakerKind: "agent", SpeakerID: "agent/sub", SpeakerDisplay: "Sub agent",
		PrincipalID: principal, Tier: authz.TierOwner, Interaction: authz.InteractionNonInteractive}
	workDirs := []string{fx.work, fx.work2}

	seedArgs := []string{
		`{}`, `{"command":"ls"}`, `{"path":"a.txt"}`, `{"path":"../outside/x"}`, `{"path":"link/x"}`,
		`{"path":"etc/passwd"}`, `{"path":"dangle"}`, `{"path":".git/config"}`, `{"path":".GIT. /x"}`,
		`{"path":"gitlink/x"}`, `{"path":"ok/new.txt"}`, `{"path":"a","PATH":"/etc/x"}`, `{"path":"a","path":"/etc/x"}`,
		`{"path":"new/../../outside/x"}`, `{"path":"link/../work/a"}`, `{"path":"/"}`, `{"path":"loop1/a"}`,
		`{"patch":"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"}`,
		`{"patch":"*** Begin Patch\n*** Update File: a\n*** Move to: link/a\n*** End Patch"}`,
		`{"patch":"*** Begin Patch\n*** Update File: a\n  *** Add File: ../x\n*** End Patch"}`,
		`{"patch":"*** Begin Patch\r\n*** Delete File: .env\r\n*** End Patch\r\n"}`,
		`[1]`, `null`, `{"path":`, ``,
		// Windows forms (plain names with a backslash on Unix).
		`{"path":"..\\outside\\x"}`, `{"path":".GIT\\config"}`, `{"path":"sub\\.Env"}`, `{"path":"a.txt:evil"}`,
		`{"path":".git::$INDEX_ALLOCATION\\config"}`, `{"path":"CON"}`, `{"path":"nul.txt"}`, `{"path":"x."}`,
		`{"path":"C:x"}`, `{"path":"\\\\?\\C:\\x"}`, `{"path":"\\\\server\\share\\x"}`, `{"path":"\\x"}`,
		`{"path":"Start Menu\\Programs\\Startup\\a.bat"}`, `{"path":"Documents\\PowerShell\\profile.ps1"}`,
		`{"path":"GIT~1\\config"}`, `{"path":"link\\x"}`,
		`{"patch":"*** Begin Patch\n*** Add File: sub\\a\n+x\n*** Add File: ..\\b\n+y\n*** End Patch"}`,
	}
	seedRules := []string{"", "*", "write", "write(" + fx.work + ":*)", "bash(ls:*)", "apply_patch(*)", "memory_*", "read(/etc/*)"}
	for i := range fuzzTools {
		for j, a := range seedArgs {
			f.Add(uint8(i), "", a, seedRules[(i+j)%len(seedRules)])
		}
	}
	f.Add(uint8(255), "custom_tool", `{"x":1}`, "custom_*")

	f.Fuzz(func(t *testing.T, pick uint8, freeTool, rawArgs, ruleTool string) {
		tool := freeTool
		if int(pick) < len(fuzzTools) {
			tool = fuzzTools[pick]
		}
		args := json.RawMessage(rawArgs)
		rules := []authz.Rule{{Tool: "*", Action: authz.ActionAllow}}
		if ruleTool != "" {
			rules = append(rules, authz.Rule{Tool: ruleTool, Action: authz.ActionAllow})
		}
		if slices.ContainsFunc(rules, func(r authz.Rule) bool { return r.Validate() != nil }) {
			rules = rules[:1]
		}
		for _, c := range []struct {
			source string
			auth   authz.Authority
		}{
			{authz.SourceMCP, mcpAuth},
			{authz.SourceAgentSpawn, agent},
			{authz.SourceMCP, agent}, // misuse: a wider authority on an MCP request
		} {
			for _, mode := range []string{authz.ModeAsk, authz.ModeBypass} {
				req := authz.Request{Source: c.source, PermissionMode: mode, Authority: c.auth, Rules: rules, WorkDirs: workDirs}
				d := decide(t, req, tool, args)
				if d.ReasonCode == refusedCode {
					t.Fatalf("the speaker of %s/%s/%s was refused: %s", c.source, c.auth.SpeakerKind, mode, d.Message)
				}
				if d.Message == "" {
					t.Fatalf("Decide(%s, %q, %q) has no message", c.source, tool, rawArgs)
				}
				if d.NeedsApproval {
					t.Fatalf("Decide(%s, %q, %q) = NeedsApproval for a non-interactive source", c.source, tool, rawArgs)
				}
				if d.Capability != authz.ToolCapability(tool) {
					t.Fatalf("Decide(%q).Capability = %q, want %q", tool, d.Capability, authz.ToolCapability(tool))
				}
				if (d.ReasonCode == "") != d.Allowed {
					t.Fatalf("Decide(%q) = %+v: reason code and Allowed disagree", tool, d)
				}
				if authz.IsRiskyTool(tool) && (d.Allowed || d.ReasonCode != authz.ReasonHardConstraint) {
					t.Fatalf("risky tool %q from %s: %+v", tool, c.source, d)
				}
				if !d.Allowed {
					continue
				}
				if c.auth.Tier == authz.TierPaired && !pairedCaps[d.Capability] {
					t.Fatalf("paired tier allowed %q needing %q", tool, d.Capability)
				}
				targets, writeLike := independentTargets(tool, args)
				if !writeLike {
					continue
				}
				if len(targets) == 0 {
					t.Fatalf("write-like %q allowed with no target: %q", tool, rawArgs)
				}
				for _, target := range targets {
					r, ok := independentResolve(fx.work, target)
					if !ok || !independentInside(r, workDirs) || independentDangerous(r) {
						t.Fatalf("%s %q allowed a write to %q (resolved %q, ok %v): args %q", c.source, tool, target, r, ok, rawArgs)
					}
				}
			}
		}
	})
}

// FuzzPatchTargets: PatchTargets never panics, and when it succeeds its targets are
// clean and complete (every marker line's path is in the list).
func FuzzPatchTargets(f *testing.F) {
	for _, s := range []string{
		"*** Begin Patch\n*** Add File: a\n+x\n*** End Patch",
		"*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@\n-x\n+y\n*** End of File\n*** Delete File: c\n*** End Patch\n",
		"  *** Begin Patch\r\n\t*** Add File: a\r\n   *** Update File: b\r\n*** End Patch  ",
		"*** Begin Patch\n*** Add File:  a\n*** End Patch",
		"*** Begin Patch\n***\n*** End Patch", "", "\n", "*** End Patch\n*** Begin Patch",
	} {
		f.Add(s)
	}
	markers := []string{"*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "}
	f.Fuzz(func(t *testing.T, patch string) {
		targets, err := authz.PatchTargets(patch)
		if err != nil {
			if targets != nil {
				t.Fatalf("PatchTargets returned targets %q with error %v", targets, err)
			}
			return
		}
		if len(targets) == 0 {
			t.Fatal("PatchTargets succeeded with no targets")
		}
		seen := map[string]bool{}
		for _, p := range targets {
			if p == "" || strings.TrimSpace(p) != p || strings.ContainsRune(p, 0) || seen[p] {
				t.Fatalf("bad target %q in %q", p, targets)
			}
			seen[p] = true
		}
		for _, l := range strings.Split(patch, "\n") {
			l = strings.TrimLeft(strings.TrimSuffix(l, "\r"), " \t")
			for _, m := range markers {
				if p, ok := strings.CutPrefix(l, m); ok && !seen[p] {
					t.Fatalf("marker line %q not in targets %q", l, targets)
				}
			}
		}
	})
}

// FuzzResolvePath: ResolvePath never panics, returns clean absolute paths, and agrees
// with filepath.EvalSymlinks whenever the whole path exists.
func FuzzResolvePath(f *testing.F) {
	fx := newFixture(f, f.TempDir())
	for _, s := range []string{"a", "sub/file.txt", "link/x", "rel/../x", "link/..", "ok/../sub", "etc/passwd",
		"dangle", "loop1", "../outside", "/", "/etc/../etc/hosts", "gitlink/config", "missing/..", "file.txt/..", "./././",
		`sub\file.txt`, `..\outside`, `sub\..\sub`, `C:\`, `.git\config`, `SUB\FILE.TXT`, `sub\file.txt\x`, `link\..`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := authz.ResolvePath(fx.work, p)
		if err != nil {
			return
		}
		if !filepath.IsAbs(got) || filepath.Clean(got) != got {
			t.Fatalf("ResolvePath(%q) = %q: not clean and absolute", p, got)
		}
		full := p
		if !filepath.IsAbs(p) {
			full = fx.work + string(filepath.Separator) + p
		}
		want, err := filepath.EvalSymlinks(full)
		if err != nil {
			return
		}
		// EvalSymlinks lets ".." climb out of a file ("file.txt/.." is the directory);
		// the kernel does not. Only compare paths that are directories all the way.
		if strings.Contains(full, "..") {
			return
		}
		if !sameFile(got, want) {
			t.Fatalf("ResolvePath(%q) = %q, EvalSymlinks = %q", p, got, want)
		}
	})
}

// FuzzParseRules: ParseRules never panics, and what it accepts validates and round-trips.
func FuzzParseRules(f *testing.F) {
	for _, s := range []string{`[]`, `null`, `[{"tool":"bash(git status:*)","action":"allow"}]`,
		`[{"tool":"read([a-)","action":"deny"}]`, `[{"tool":"memory_*","action":"ask"},{"tool":"x","action":"deny"}]`,
		`{"tool":"bash","action":"allow"}`, `[{"tool":"bash","action":"allow","x":1}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		rules, err := authz.ParseRules(json.RawMessage(raw))
		if err != nil {
			if rules.Len() != 0 {
				t.Fatalf("rules %v with error %v", rules.List(), err)
			}
			return
		}
		for _, r := range rules.List() {
			if err := r.Validate(); err != nil {
				t.Fatalf("ParseRules accepted %v but Validate says %v", r, err)
			}
		}
		if _, err := authz.NewRules(rules.List()...); err != nil {
			t.Fatalf("NewRules refuses what ParseRules accepted (%v): %v", rules.List(), err)
		}
		b, err := json.Marshal(rules)
		if err != nil {
			t.Fatal(err)
		}
		again, err := authz.ParseRules(b)
		if err != nil || again.Len() != rules.Len() || (rules.Len() > 0 && diff(again.List(), rules.List()) != "") {
			t.Fatalf("round trip of %s: %v, %v", b, again.List(), err)
		}
	})
}

// TestPairedNeverGainsCapability tries every tool, source, mode and rule set with
// paired authorities: nothing outside the paired capabilities is ever allowed, and no
// paired speaker is ever asked for approval.
func TestPairedNeverGainsCapability(t *testing.T) {
	fx := newFixture(t, t.TempDir())
	mcpAuth, _ := authz.MCPClientAuthority(clientID, principal)
	peer := authz.Authority{SpeakerKind: "peer", SpeakerID: "peer/1", SpeakerDisplay: "Peer",
		PrincipalID: principal, Tier: authz.TierPaired, Interaction: authz.InteractionInteractive}
	tools := append(slices.Clone(fuzzTools), "memory_status", "memory_get", "memory_browse", "memory_grep",
		"send_message", "web_search", "worktree_add", "todo_read", "schedule_create", "reply")
	ruleSets := [][]authz.Rule{nil, rules("allow *"), rules("allow *", "ask memory_*"), rules("deny *")}
	sources := []string{authz.SourceMCP, authz.SourceAgentSpawn, authz.SourceCLI, "", "other"}
	n := 0
	for _, a := range []authz.Authority{mcpAuth, peer} {
		for _, src := range sources {
			for _, mode := range []string{authz.ModeAsk, authz.ModeBypass, ""} {
				for _, rs := range ruleSets {
					for _, tool := range tools {
						req := authz.Request{Source: src, PermissionMode: mode, Authority: a, Rules: rs, WorkDirs: []string{fx.work}}
						d := decide(t, req, tool, args("path", "a.txt", "command", "ls"))
						n++
						if d.Allowed && !pairedCaps[d.Capability] {
							t.Errorf("paired %s/%s/%s/%v: %q allowed with %q", a.SpeakerKind, src, mode, rs, tool, d.Capability)
						}
						if d.NeedsApproval {
							t.Errorf("paired %s/%s: %q needs approval; a paired speaker cannot approve", a.SpeakerKind, src, tool)
						}
					}
				}
			}
		}
	}
	if n < 1000 {
		t.Fatalf("only %d combinations tried", n)
	}
}
