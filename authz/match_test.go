package authz_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

// TestRuleMatching pins what patterns match, through Decide for an interactive owner on
// the CLI in ask mode: "allow" means an allow rule matched, "approval" that nothing
// decided (or an ask rule matched), "deny" that a deny rule matched.
func TestRuleMatching(t *testing.T) {
	f := newFixture(t, t.TempDir())
	w := f.work
	owner, _ := authz.OwnerAuthority(principal)
	cmd := func(c string) json.RawMessage { return args("command", c) }
	pth := func(p string) json.RawMessage { return args("path", p) }
	type row struct {
		rule    string // "action tool(pattern)"
		tool    string
		args    json.RawMessage
		outcome string
	}
	rows := []row{
		// Shell prefix allow: word boundary, no chaining, piping, redirection or substitution.
		{"allow bash(git status:*)", "bash", cmd("git status"), "allow"},
		{"allow bash(git status:*)", "bash", cmd("  git \t status   --short "), "allow"},
		{"allow bash(git  status :*)", "bash", cmd("git status -s"), "allow"},
		{"allow bash(git status:*)", "bash", cmd("git statusx"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git stat"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status; rm -rf /"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status && rm -rf /"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status || rm -rf /"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status | sh"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status & rm -rf /"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status > ~/.bashrc"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status < /etc/shadow"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status `rm -rf /`"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status $(rm -rf /)"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status\nrm -rf /"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git status\rrm -rf /"), "approval"},
		{"allow bash(git status:*)", "bash", args("cmd", "git status"), "approval"},
		{"allow bash(git status:*)", "bash", args("command", 1), "approval"},
		{"allow bash(git status:*)", "bash", json.RawMessage(`not json`), "approval"},
		{"allow bash(git status:*)", "shell", cmd("git status"), "approval"}, // other tool name
		{"allow bash(git status:*)", "bash", json.RawMessage(`{"command":"git status","COMMAND":"rm -rf /"}`), "approval"},
		{"allow bash(git status:*)", "bash", json.RawMessage(`{"command":"git status","command":"rm -rf /"}`), "approval"},
		{"allow bash(git status:*)", "bash", json.RawMessage(`{"command":"git status"} {}`), "approval"},
		{"deny bash(rm:*)", "bash", json.RawMessage(`{"command":"ls","Command":"rm -rf /"}`), "deny"},
		{"allow bash", "bash", cmd("anything; at all"), "allow"}, // bare name: every call
		{"allow *", "bash", cmd("rm -rf /"), "allow"},
		// Shell glob and exact allow.
		{"allow bash(npm run *)", "bash", cmd("npm run test"), "allow"},
		{"allow bash(npm run *)", "bash", cmd("npm run ./a/b"), "allow"},
		{"allow bash(npm run *)", "bash", cmd("npm run x; rm -rf /"), "approval"},
		{"allow bash(npm run *)", "bash", cmd("npm install"), "approval"},
		{"allow bash(ls -la)", "bash", cmd(" ls   -la "), "allow"},
		{"allow bash(ls -la)", "bash", cmd("ls -la /"), "approval"},
		{"allow bash(make && make install)", "bash", cmd("make && make install"), "allow"},
		{"allow bash(make && make install)", "bash", cmd("make && make install; rm x"), "approval"},
		{"allow bash(make && make install)", "bash", cmd("make && make\ninstall"), "approval"},
		{"allow bash(ls -la)", "bash", cmd("ls\n-la"), "approval"},
		{"allow bash(git status:*)", "bash", cmd("git\u00a0status"), "approval"}, // only shell blanks collapse
		// Shell deny and ask: the whole command or any simple command in it, plain prefixes.
		{"deny bash(rm:*)", "bash", cmd("rm -rf /"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("echo hi; rm -rf /"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("echo hi&&rm -rf /"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("echo $(rm x)"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("echo `rm x`"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("ls | xargs rm"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("sudo rm x"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("sudo -n rm x"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("FOO=1 BAR=2 rm x"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("env rm x"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("(cd /; rm x)"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("if true; then rm x; fi"), "deny"},
		{"deny bash(rm:*)", "bash", cmd("rmdir x"), "deny"}, // plain prefix for deny
		{"deny bash(rm:*)", "bash", cmd("echo rm"), "approval"},
		{"deny bash(rm:*)", "bash", args("cmd", "rm -rf /"), "deny"}, // unknown subject: deny matches
		{"deny bash(*curl*)", "bash", cmd("x && /usr/bin/curl http://a/b"), "deny"},
		{"ask bash(git push:*)", "bash", cmd("git status; git push --force"), "approval"},
		{"deny bash(git push --force)", "bash", cmd("git   push  --force"), "deny"},
		// Path tools: the resolved path.
		{"allow write(" + w + "/docs:*)", "write", pth("docs/a.md"), "allow"},
		{"allow write(" + w + "/docs/:*)", "write", pth("docs/deep/a.md"), "allow"},
		{"allow write(" + w + "/docs:*)", "write", pth("docs2/a.md"), "approval"},
		{"allow write(" + w + "/docs:*)", "write", pth("docs/../x"), "approval"},
		{"allow write(" + w + "/docs:*)", "write", pth(w + "/docs"), "allow"},
		{"allow write(docs/*.md)", "write", pth("docs/a.md"), "allow"},
		{"allow write(docs/*.md)", "write", pth("docs/sub/a.md"), "approval"},
		{"allow write(docs/*.md)", "write", pth("./sub/../docs/b.md"), "allow"},
		{"allow write(docs/*.md)", "write", pth("docs/missing/../b.md"), "approval"}, // .. out of a missing directory
		{"allow write(" + w + "/*)", "write", pth("link/a"), "approval"},
		{"allow write(" + w + "/*)", "write", pth("ok"), "allow"}, // ok -> sub, still inside
		{"allow write(a.txt)", "write", pth("a.txt"), "allow"},
		{"allow write(a.txt)", "write", pth("sub/../a.txt"), "allow"},
		{"allow write(a.txt)", "write", pth("b.txt"), "approval"},
		{"allow write(" + w + ":*)", "write", args("path", 5), "approval"},
		{"deny read(" + f.outside + "/*)", "read", pth("link/secret"), "deny"},
		{"deny read(" + etcDir + "/passwd)", "read", pth("etc/passwd"), "deny"},
		{"deny read(*.env)", "read", pth("prod.env"), "deny"},
		{"deny read(*.env)", "read", pth("sub/prod.env"), "allow"},   // safe tool; * does not cross /
		{"deny read(" + w + "/se:*)", "read", pth("secret"), "deny"}, // plain prefix for deny
		{"deny read(" + w + "/sub:*)", "read", pth("ok/file.txt"), "deny"},
		{"deny grep(" + w + ")", "grep", args("pattern", "x"), "deny"},
		{"deny grep(" + w + ")", "grep", args("pattern", "x", "path", "sub"), "allow"},
		{"deny grep(" + w + ")", "grep", json.RawMessage(`{"pattern":"x","PATH":"/"}`), "deny"}, // ambiguous: deny matches
		{"deny read(/nowhere:*)", "read", args("path", 5), "deny"},                              // unknown subject: deny matches
		{"deny read(/nowhere:*)", "read", pth("loop1"), "deny"},
		{"deny read(/nowhere:*)", "read", pth("a"), "allow"},
		// apply_patch: allow needs every target, deny and ask any.
		{"allow apply_patch(" + w + "/docs:*)", "apply_patch", patch("*** Add File: docs/a", "+x", "*** Update File: docs/b", "-x", "+y"), "allow"},
		{"allow apply_patch(" + w + "/docs:*)", "apply_patch", patch("*** Add File: docs/a", "+x", "*** Update File: src/b"), "approval"},
		{"allow apply_patch(" + w + "/docs:*)", "apply_patch", patch("*** Update File: docs/a", "*** Move to: src/a"), "approval"},
		{"deny apply_patch(" + w + "/ci/*)", "apply_patch", patch("*** Add File: docs/a", "+x", "*** Delete File: ci/deploy.yml"), "deny"},
		{"deny apply_patch(" + w + "/ci/*)", "apply_patch", args("patch", "garbage"), "deny"},
		{"allow apply_patch", "apply_patch", args("patch", "garbage"), "allow"},
		// Any other tool: canonical JSON (sorted keys, compact, no HTML escaping, numbers verbatim).
		{`allow web_fetch({"url":"https://example.com"})`, "web_fetch", json.RawMessage(`{ "url" : "https://example.com" }`), "allow"},
		{`allow web_fetch({"a":1,"url":"https://example.com"})`, "web_fetch", json.RawMessage(`{"url":"https://example.com","a":1}`), "allow"},
		{`allow web_fetch({"url":"https://example.com"})`, "web_fetch", json.RawMessage(`{"url":"https://example.com","a":1}`), "approval"},
		{`allow web_fetch({"url":"https://example.com/:*)`, "web_fetch", args("url", "https://example.com/a/b"), "allow"},
		{`allow web_fetch({"url":"https://example.com/*"})`, "web_fetch", args("url", "https://example.com/a/b"), "allow"},
		{`allow web_fetch({"url":"https://example.com/*"})`, "web_fetch", args("url", "https://evil.com/https://example.com/"), "approval"},
		{`allow web_fetch({"q":"a<b&c"})`, "web_fetch", json.RawMessage(`{"q":"a\u003cb\u0026c"}`), "allow"},
		{`allow frob({"n":1.50})`, "frob", json.RawMessage(`{"n": 1.50}`), "allow"},
		{`allow frob({})`, "frob", nil, "allow"},
		{`allow frob({})`, "frob", json.RawMessage(`null`), "allow"},
		{`allow frob({})`, "frob", json.RawMessage(`[]`), "approval"},
		{`deny frob({})`, "frob", json.RawMessage(`[]`), "deny"},
		// Tool name globs.
		{"deny memory_*", "memory_search", nil, "deny"},
		{"deny memory_*", "memory", nil, "approval"},
		{"allow todo_?", "todo_x", nil, "allow"},
		{"allow web_*", "web_fetch", nil, "allow"},
	}
	if onWindows {
		rows = append(rows, []row{
			// Commands: deny and ask ignore letter case, allow does not.
			{"deny bash(Remove-Item *)", "bash", cmd("remove-item x"), "deny"},
			{"deny bash(rm:*)", "bash", cmd("echo hi; RM -rf /c"), "deny"},
			{"allow bash(git status:*)", "bash", cmd("GIT STATUS"), "approval"},
			{"allow bash(Get-ChildItem)", "bash", cmd("Get-ChildItem"), "allow"},
			// Paths: either slash, any letter case, drive letters.
			{"allow write(" + w + `\docs:*)`, "write", pth(`docs\a.md`), "allow"},
			{"allow write(" + w + `\docs:*)`, "write", pth(`DOCS\A.md`), "allow"},
			{"allow write(" + w + `\docs:*)`, "write", pth(`docs2\a.md`), "approval"},
			{"allow write(" + strings.ToUpper(w) + "/docs:*)", "write", pth(`docs\a.md`), "allow"},
			{`allow write(docs\*.md)`, "write", pth(`docs/a.MD`), "allow"},
			{`allow write(docs\*.md)`, "write", pth(`docs\sub\a.md`), "approval"},
			{`allow write(docs\*.md)`, "write", pth(`docs\a.md:evil`), "approval"}, // a stream is not resolved
			{"allow write(a.txt)", "write", pth(`A.TXT`), "allow"},
			{"allow write(a.txt)", "write", pth(`a.txt.`), "approval"},
			{"deny read(*.env)", "read", pth(`PROD.ENV`), "deny"},
			{"deny read(*.env)", "read", pth(`prod.env::$DATA`), "deny"}, // unresolvable: deny matches
			{"deny read(" + w + `\se:*)`, "read", pth(`SECRET`), "deny"},
			{"deny read(" + etcDir + `\hosts)`, "read", pth(strings.ToUpper(etcDir) + `\HOSTS`), "deny"},
			{"deny read(" + etcDir + `\hosts)`, "read", pth(`\\?\` + etcDir + `\hosts`), "deny"},
			{"deny read(" + etcDir + `\hosts)`, "read", pth(`\\localhost\C$\x`), "deny"},
			{"deny grep(" + w + ")", "grep", args("pattern", "x", "path", `sub\..`), "deny"},
			{"allow apply_patch(" + w + "/docs:*)", "apply_patch", patch("*** Add File: docs\\a", "+x", "*** Add File: Docs/b", "+y"), "allow"},
			{"allow apply_patch(" + w + "/docs:*)", "apply_patch", patch("*** Add File: docs\\a", "+x", "*** Add File: docs\\..\\b", "+y"), "approval"},
		}...)
	}
	for _, r := range rows {
		if f.skipCall(t, r.rule+" "+string(r.args), r.args) {
			continue
		}
		req := authz.Request{Source: authz.SourceCLI, PermissionMode: authz.ModeAsk, Authority: owner,
			Rules: rules(r.rule), WorkDirs: []string{w}}
		d := decide(t, req, r.tool, r.args)
		if got := outcome(d); got != r.outcome {
			t.Errorf("rule %q, %s %s: got %s, want %s (%s)", r.rule, r.tool, r.args, got, r.outcome, d.Message)
		}
	}
}

// Without working directories, relative path patterns and relative paths cannot be
// resolved: allow rules do not match, deny rules do.
func TestRuleMatchingNoWorkDirs(t *testing.T) {
	owner, _ := authz.OwnerAuthority(principal)
	for _, c := range []struct {
		rule, path, outcome string
	}{
		{"allow write(a.txt)", "/tmp/a.txt", "approval"},
		{"allow write(/tmp:*)", "a.txt", "approval"},
		{"deny read(a.txt)", "/tmp/a.txt", "deny"},
		{"deny read(/nowhere)", "a.txt", "deny"},
	} {
		req := authz.Request{Source: authz.SourceCLI, Authority: owner, Rules: rules(c.rule)}
		tool := "write"
		if c.outcome == "deny" {
			tool = "read"
		}
		d := decide(t, req, tool, args("path", c.path))
		got := "approval"
		if d.Allowed {
			got = "allow"
		} else if d.ReasonCode == authz.ReasonRuleDeny {
			got = "deny"
		}
		if got != c.outcome {
			t.Errorf("rule %q, path %q: got %s (%+v), want %s", c.rule, c.path, got, d, c.outcome)
		}
	}
}

// A working directory whose name holds glob characters is matched literally by relative
// glob patterns.
func TestRuleMatchingGlobCharsInWorkDir(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(base, globDirName)
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	owner, _ := authz.OwnerAuthority(principal)
	req := authz.Request{Source: authz.SourceCLI, Authority: owner, Rules: rules("allow write(*.md)"), WorkDirs: []string{wd}}
	if d := decide(t, req, "write", args("path", "a.md")); !d.Allowed {
		t.Errorf("write a.md in %q: %+v, want allowed", wd, d)
	}
	if d := decide(t, req, "write", args("path", "a.txt")); d.Allowed {
		t.Errorf("write a.txt in %q: %+v, want not allowed", wd, d)
	}
}
