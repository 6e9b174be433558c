package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/internal/wine"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/provider"
)

// fixture is a git work tree whose state directory lies inside it, as with
// OPENPROGRAM_HOME=./state, holding the files a model would like to plant.
type fixture struct {
	work, state string
	cfg         host.Config
}

// protectedTargets are the writes no speaker's turn may make under an
// allow rule for every file tool: the state directory (directly, and
// through a symlink) and dangerous files and directories.
var protectedTargets = []string{
	"state/mcp_server_token", "state/config.json", "statelink/planted",
	".bashrc", ".env", ".git/hooks/pre-commit",
}

// skipWithoutSymlinks skips under Wine, whose CreateSymbolicLink reports
// success and makes nothing: the statelink of the fixture is not there.
func skipWithoutSymlinks(t *testing.T) {
	t.Helper()
	if wine.Detected() {
		t.Skip("Wine's CreateSymbolicLink makes nothing: the state directory behind a symlink is proven on Unix and Windows")
	}
}

func newFixture(t *testing.T, script []map[string]any) fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{work: filepath.Join(root, "work")}
	f.state = filepath.Join(f.work, "state")
	for _, d := range []string{f.state, filepath.Join(f.work, ".git", "hooks")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(f.state, filepath.Join(f.work, "statelink")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.state, "mcp_server_token"), []byte("the real token"), 0o600); err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(root, "script.json")
	data, err := json.Marshal(map[string]any{"turns": script})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scriptPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := authz.NewRules(
		authz.Rule{Tool: "write", Action: authz.ActionAllow}, authz.Rule{Tool: "edit", Action: authz.ActionAllow},
		authz.Rule{Tool: "apply_patch", Action: authz.ActionAllow}, authz.Rule{Tool: "bash", Action: authz.ActionAllow},
	)
	if err != nil {
		t.Fatal(err)
	}
	f.cfg = host.Config{
		StateDir: f.state,
		StoreURL: "sqlite:" + filepath.Join(root, "openprogram.db"),
		Model:    provider.Config{Provider: "scripted", Script: scriptPath},
		Agent:    host.AgentConfig{WorkDirs: []string{f.work}},
		Tools:    host.ToolsConfig{PermissionRules: rules},
	}
	return f
}

func (f fixture) open(t *testing.T) *host.Host {
	t.Helper()
	h, err := host.Open(context.Background(), f.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// checkUntouched fails for every protected target that a turn changed.
func (f fixture) checkUntouched(t *testing.T) {
	t.Helper()
	if got, err := os.ReadFile(filepath.Join(f.state, "mcp_server_token")); err != nil || string(got) != "the real token" {
		t.Errorf("mcp_server_token = %q, %v; want it untouched", got, err)
	}
	for _, p := range protectedTargets[1:] {
		if _, err := os.Lstat(filepath.Join(f.work, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
	for _, p := range []string{"state/planted", "planted-in-state"} {
		if _, err := os.Lstat(filepath.Join(f.work, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}
}

// TestEverySpeakerIsKeptOutOfTheStateDir: the owner's speaker, interactive
// or not, gets the state-directory and dangerous-path protection the MCP
// client's speaker gets, because the host builds both requests in one
// place. Each write is a hard-constraint denial and nothing is written.
func TestEverySpeakerIsKeptOutOfTheStateDir(t *testing.T) {
	skipWithoutSymlinks(t)
	f := newFixture(t, nil)
	h := f.open(t)
	mcp, err := h.MCPClient("0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	owner, err := h.Owner(host.OwnerOptions{Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	ownerNI, err := h.Owner(host.OwnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for name, sp := range map[string]authz.Speaker{"mcp": mcp, "owner": owner, "owner non-interactive": ownerNI} {
		if sp.StateDir() != f.state {
			t.Errorf("%s: StateDir = %q, want %q", name, sp.StateDir(), f.state)
		}
		for _, p := range protectedTargets {
			for _, c := range []runtime.ToolCall{
				{ID: "w", Name: "write", Arguments: json.RawMessage(`{"path":"` + p + `","content":"planted"}`)},
				{ID: "p", Name: "apply_patch", Arguments: json.RawMessage(`{"patch":"*** Begin Patch\n*** Add File: ` + p + `\n+planted\n*** End Patch\n"}`)},
			} {
				res := h.Runtime().RunTool(context.Background(), sp, c)
				d, denied := res.Denial()
				if !denied || d.ReasonCode != authz.ReasonHardConstraint {
					t.Errorf("%s: %s %s = %+v, want a hard-constraint denial", name, c.Name, p, res)
				}
			}
		}
	}
	// bash, which only the owner may run, never starts in the state
	// directory either: its working directory is checked, whatever the
	// rules allow.
	f.cfg.Agent.WorkDirs = []string{f.state}
	inState := f.open(t)
	ownerInState, err := inState.Owner(host.OwnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := inState.Runtime().RunTool(context.Background(), ownerInState, runtime.ToolCall{ID: "b", Name: "bash", Arguments: json.RawMessage(`{"command":"echo x > planted"}`)})
	if !res.IsError || !strings.Contains(res.Text(), "protected directory") {
		t.Errorf("bash in the state directory = %+v, want a refusal", res)
	}
	f.checkUntouched(t)
}

// TestOwnerTurnCannotTakeOverTheToken replays the attack through a whole
// owner turn, as `openprogram prompt` runs it: a scripted model asks for
// the writes that would hand it the MCP token and a git hook; every one is
// denied, the turn goes on, and an ordinary file is written.
func TestOwnerTurnCannotTakeOverTheToken(t *testing.T) {
	skipWithoutSymlinks(t)
	var calls []map[string]any
	for i, p := range protectedTargets {
		calls = append(calls, map[string]any{"name": "write", "id": "w" + string(rune('a'+i)), "arguments": map[string]any{"path": p, "content": "planted"}})
	}
	calls = append(calls, map[string]any{"name": "write", "id": "ok", "arguments": map[string]any{"path": "notes.txt", "content": "fine"}})
	f := newFixture(t, []map[string]any{{"tool_calls": calls}, {"text": "done"}})
	h := f.open(t)
	owner, err := h.Owner(host.OwnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	line, err := h.Conversations().Open(owner, &conversation.LineOptions{Via: "prompt"})
	if err != nil {
		t.Fatal(err)
	}
	turn := line.NewTurn("r1", "", "plant it")
	if err := line.Admit(ctx, turn); err != nil {
		t.Fatal(err)
	}
	res, err := line.Send(ctx, turn, conversation.SendOptions{})
	if err != nil || res.Failed {
		t.Fatalf("turn = %+v, %v", res, err)
	}
	f.checkUntouched(t)
	if got, err := os.ReadFile(filepath.Join(f.work, "notes.txt")); err != nil || string(got) != "fine" {
		t.Errorf("notes.txt = %q, %v; want the allowed write", got, err)
	}
}

// TestOwnerNeedsAWorkingDirectory: without agent.work_dirs the owner works
// where the console started; a relative or missing one is refused.
func TestOwnerNeedsAWorkingDirectory(t *testing.T) {
	f := newFixture(t, nil)
	f.cfg.Agent.WorkDirs = nil
	h := f.open(t)
	if _, err := h.Owner(host.OwnerOptions{WorkDir: "relative"}); err == nil {
		t.Error("Owner with a relative working directory: no error")
	}
	sp, err := h.Owner(host.OwnerOptions{WorkDir: f.work})
	if err != nil || len(sp.WorkDirs()) != 1 || sp.WorkDirs()[0] != f.work {
		t.Errorf("Owner = %v, %v; want the working directory %s", sp.WorkDirs(), err, f.work)
	}
	mcp, err := h.MCPClient("0123456789abcdef")
	if err != nil || len(mcp.WorkDirs()) != 0 {
		t.Errorf("MCPClient = %v, %v; want no working directory", mcp.WorkDirs(), err)
	}
}
