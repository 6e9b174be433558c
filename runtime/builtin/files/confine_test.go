package files_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/internal/wine"
	"github.com/openprogram/openprogram/runtime/builtin/files"
	"github.com/openprogram/openprogram/runtime/tool"
)

// TestErrorsRevealNothing: what the file tools return for a refused or
// failing path names it only as the call gave it (or relative to the
// working directory), never a resolved path, a symlink target or a path
// of the machine outside the working directories.
func TestErrorsRevealNothing(t *testing.T) {
	e := newEnv(t, nil)
	outside := t.TempDir()
	linked := map[string]bool{
		"link": symlink(t, outside, filepath.Join(e.work, "link")),
		"loop": symlink(t, "loop", filepath.Join(e.work, "loop")),
	}
	e.write("f.txt", "x\n")
	cwd, _ := os.Getwd()
	exe, _ := os.Executable()
	type row struct {
		tool   string
		args   map[string]any
		reason string
		text   string
	}
	var unixRows []row // Linux's paths; TestWindowsPathTricks has Windows'
	if unixPaths {
		unixRows = []row{
			{"write", map[string]any{"path": "/proc/self/cwd/x", "content": "x"}, files.ReasonOutsideWorkDir, "/proc/self/cwd/x is outside the working directories"},
			{"write", map[string]any{"path": "/proc/self/exe/../x", "content": "x"}, files.ReasonOutsideWorkDir, "/proc/self/exe/../x is outside the working directories"},
			{"write", map[string]any{"path": "/etc/nonexistent/../x", "content": "x"}, files.ReasonOutsideWorkDir, "/etc/nonexistent/../x is outside the working directories"},
			{"read", map[string]any{"path": "/proc/self/fd/0"}, files.ReasonOutsideWorkDir, "/proc/self/fd/0 is outside the working directories"},
			{"list", map[string]any{"path": "/proc/self/root"}, files.ReasonOutsideWorkDir, "/proc/self/root is outside the working directories"},
			{"grep", map[string]any{"pattern": "x", "path": "/proc/self/cwd"}, files.ReasonOutsideWorkDir, "/proc/self/cwd is outside the working directories"},
			{"apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: /proc/self/cwd/x\n+x\n*** End Patch"}, files.ReasonOutsideWorkDir, "/proc/self/cwd/x is outside the working directories"},
		}
	}
	cases := append(unixRows, []row{
		{"read", map[string]any{"path": "link/secret"}, files.ReasonOutsideWorkDir, "link/secret is outside the working directories"},
		{"read", map[string]any{"path": "link/missing/../x"}, files.ReasonOutsideWorkDir, "link/missing/../x is outside the working directories"},
		{"glob", map[string]any{"pattern": "*", "path": "link"}, files.ReasonOutsideWorkDir, "link is outside the working directories"},
		{"edit", map[string]any{"path": "loop/x", "old_string": "a", "new_string": "b"}, files.ReasonBadPath, "loop/x cannot be resolved"},
		{"read", map[string]any{"path": "f.txt/x"}, files.ReasonBadPath, "f.txt/x cannot be resolved"},
		{"read", map[string]any{"path": "missing.txt"}, files.ReasonNotFound, "missing.txt does not exist"},
		{"write", map[string]any{"path": ".git/config", "content": "x"}, files.ReasonProtected, ".git/config is inside a protected directory"},
		{"write", map[string]any{"path": "sub/.env", "content": "x"}, files.ReasonProtected, "sub/.env is a protected file"},
	}...)
	for _, c := range cases {
		p, _ := c.args["path"].(string)
		if made, isLink := linked[strings.Split(p, "/")[0]]; isLink && !made {
			continue // through a symlink the system did not make (logged above)
		}
		res := e.call(c.tool, c.args)
		if !res.IsError || res.ReasonCode() != c.reason || res.Text() != c.text {
			t.Errorf("%s %v = %q (%s), want %q (%s)", c.tool, c.args, res.Text(), res.ReasonCode(), c.text, c.reason)
		}
		for _, secret := range []string{e.work, outside, cwd, filepath.Dir(exe)} {
			if strings.Contains(res.Text(), secret) {
				t.Errorf("%s %v = %q reveals %s", c.tool, c.args, res.Text(), secret)
			}
		}
	}
}

// TestConstrainedWritesAreProtected: a constrained source (every source
// but cli, and a call without CallInfo) cannot write dangerous files,
// into dangerous directories (also through a symlink inside the working
// directory) or into the state directory wherever it is. The owner at the
// CLI cannot write the state directory either, whatever the rules say, and
// a dangerous path only with an allow rule naming that exact path.
func TestConstrainedWritesAreProtected(t *testing.T) {
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(work, "home", "op")
	for _, d := range []string{state, filepath.Join(work, ".git")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	targets := []string{"g/hooks/pre-commit", ".git/x", "home/op/config.json", "home/op", ".bashrc"}
	if wine.Detected() {
		// Wine makes no symlinks (its CreateSymbolicLink reports success and
		// creates nothing): g would be a plain new directory there.
		targets = targets[1:]
	} else if err := os.Symlink(".git", filepath.Join(work, "g")); err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	for _, tl := range files.Tools(&files.Options{WorkDirs: []string{work}, StateDir: state}) {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, work: work, reg: reg, ex: tool.NewExecutor(nil)}
	speaker := func(owner bool, rules []authz.Rule, stateDir string) tool.CallInfo {
		t.Helper()
		rs, err := authz.NewRules(rules...)
		if err != nil {
			t.Fatal(err)
		}
		at := authz.Scope{Rules: rs, WorkDirs: []string{work}, StateDir: stateDir}
		sp, err := authz.NewMCPClient("0123456789abcdef", "owner/install/fedcba9876543210", at)
		if owner {
			sp, err = authz.NewOwner("owner/install/fedcba9876543210", true, at)
		}
		if err != nil {
			t.Fatal(err)
		}
		return tool.CallInfo{Speaker: sp}
	}
	{
		e.ctx = tool.WithCall(context.Background(), speaker(false, nil, state))
		for _, p := range targets {
			wantErr(t, e.call("write", map[string]any{"path": p, "content": "x"}), files.ReasonProtected)
			wantErr(t, e.call("apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: " + p + "\n+x\n*** End Patch"}), files.ReasonProtected)
		}
	}
	e.ctx = context.Background() // no CallInfo: constrained
	wantErr(t, e.call("write", map[string]any{"path": "home/op/owner.json", "content": "x"}), files.ReasonProtected)
	for _, p := range []string{".git/x", "home/op/config.json", ".bashrc"} {
		if _, err := os.Lstat(filepath.Join(work, p)); err == nil {
			t.Errorf("%s was written by a constrained source", p)
		}
	}
	allowAll := []authz.Rule{{Tool: "*", Action: authz.ActionAllow}}
	e.ctx = tool.WithCall(context.Background(), speaker(true, allowAll, state))
	for _, p := range targets {
		wantErr(t, e.call("write", map[string]any{"path": p, "content": "x"}), files.ReasonProtected)
		wantErr(t, e.call("edit", map[string]any{"path": p, "old_string": "a", "new_string": "b"}), files.ReasonProtected)
		wantErr(t, e.call("apply_patch", map[string]any{"patch": "*** Begin Patch\n*** Add File: " + p + "\n+x\n*** End Patch"}), files.ReasonProtected)
	}
	// The call's own state directory counts even where Options has another.
	e.ctx = tool.WithCall(context.Background(), speaker(true, allowAll, filepath.Join(work, "sub")))
	wantErr(t, e.call("write", map[string]any{"path": "sub/x", "content": "x"}), files.ReasonProtected)
	exact := []authz.Rule{
		{Tool: "write(.git/info)", Action: authz.ActionAllow}, // rules match the resolved path
		{Tool: "write(" + filepath.Join(state, "config.json") + ")", Action: authz.ActionAllow},
	}
	e.ctx = tool.WithCall(context.Background(), speaker(true, exact, state))
	viaLink := "g/info"
	if wine.Detected() {
		viaLink = ".git/info" // no symlink g under Wine: the path itself
	}
	wantOK(t, e.call("write", map[string]any{"path": viaLink, "content": "x"}))
	if got := e.read(".git/info"); got != "x" {
		t.Errorf(".git/info = %q, want the owner's write under an exact rule", got)
	}
	wantErr(t, e.call("write", map[string]any{"path": "home/op/config.json", "content": "{}"}), files.ReasonProtected)
	wantErr(t, e.call("write", map[string]any{"path": ".bashrc", "content": "x"}), files.ReasonProtected)
	for _, p := range []string{"home/op/config.json", "home/op/x", ".bashrc", ".git/x", "sub/x"} {
		if _, err := os.Lstat(filepath.Join(work, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// TestGateDenialTexts: the text of a gate denial (the decision's message)
// is what a turn stores as the tool result, which any MCP client reads
// back with session_get. For an MCP client's turn it names the path only
// as the model gave it.
func TestGateDenialTexts(t *testing.T) {
	e := newEnv(t, nil)
	req, err := authz.NewMCPClient("0123456789abcdef", "owner/install/fedcba9876543210", authz.Scope{WorkDirs: []string{e.work}})
	if err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Getwd()
	exe, _ := os.Executable()
	cases := append(systemGateRows(), []gateRow{
		{"write", map[string]any{"path": ".git/hooks/post-checkout", "content": "x"}, "hard constraint: write target .git/hooks/post-checkout is inside a protected directory"},
		{"write", map[string]any{"path": "ok.txt", "content": "x"}, "authority tier paired does not allow fs.write"},
	}...)
	for _, c := range cases {
		tl, _ := e.reg.Get(c.tool)
		res := gated(e.ex, tl, req, mustJSON(t, c.args))
		if !res.IsError || res.Text() != c.want {
			t.Errorf("%s %v = %q, want %q", c.tool, c.args, res.Text(), c.want)
		}
		for _, secret := range []string{e.work, cwd, filepath.Dir(exe)} {
			if strings.Contains(res.Text(), secret) {
				t.Errorf("%s %v = %q reveals %s", c.tool, c.args, res.Text(), secret)
			}
		}
	}
}

// gateRow is a call and the text of the gate's denial of it.
type gateRow struct {
	tool string
	args map[string]any
	want string
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
