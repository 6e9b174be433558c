// Package interoptest is what the interop test packages share
// (cli/e2e/interop/...: one package per client none of us wrote, so that
// each client's long turn is its own package's time, and cli/e2e/tasks):
// the client's npm project installed from its lock file (Project), a fresh
// installation with the interop tools exposed (Setup), and the harness of
// the real agent clients driven by a fake of their vendor's model API
// (Client, FullPlan, PromptPlan).
//
// It is internal to the end-to-end tests and has no stability promise.
package interoptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/e2e/fakemodel"
	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
)

// Exposed is mcp_server.exposed_tools of every interop installation; bash
// and read are there to show that exposing them does not make them usable
// by a paired client.
const Exposed = `["memory_status","memory_update","memory_search","memory_get","bash","read"]`

// Usable is what tools_list must show for Exposed.
var Usable = []string{"memory_status", "memory_update", "memory_search", "memory_get"}

// Wrappers are the six tools, in contract order.
var Wrappers = []string{"sessions_list", "session_get", "prompt_send", "prompt_cancel", "tools_list", "tool_call"}

// Root is the repository's interop directory.
func Root(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(e2etest.RepoRoot(t), "interop")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the interop directory: %v", err)
	}
	return dir
}

// Project is interop/<name> with its npm packages installed from its lock
// file (e2etest.NpmCI). Without node and npm the test skips, except under
// CI=true, where it fails.
func Project(t *testing.T, name string) string {
	t.Helper()
	e2etest.RequireTool(t, "node")
	npm := e2etest.RequireTool(t, "npm")
	dir := filepath.Join(Root(t), name)
	e2etest.NpmCI(t, npm, dir)
	return dir
}

// BaseEnv is the environment of a client that starts the server itself:
// PATH and a private HOME, nothing that could point the server at another
// store or profile.
func BaseEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}
}

// Setup makes a fresh installation on SQLite with a token and Exposed.
func Setup(t *testing.T) *e2etest.Install {
	t.Helper()
	in := e2etest.NewInstall(t, e2etest.SQLite)
	in.MustRun("config", "set", "mcp_server.exposed_tools", Exposed)
	return in
}

// ScriptTS makes in's model the scripted model of interop/ts/script.json,
// the answers the TypeScript SDK and the Inspector expect.
func ScriptTS(t *testing.T, in *e2etest.Install) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Root(t), "ts", "script.json"))
	if err != nil {
		t.Fatalf("read the scripted model: %v", err)
	}
	var s scripted.Script
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("decode interop/ts/script.json: %v", err)
	}
	in.Script(s.Turns...)
}

// The long turn: every client's first call is a prompt_send whose turn the
// scripted model streams for LongWords*WordDelay (about 90 s), so each
// client shows it waits out a turn longer than its own tool timeout would
// allow without the server's progress notifications.
const (
	LongWords = 90
	WordDelay = time.Second
)

// Prompt is what the plan's prompt_send asks.
const Prompt = "interop: walk slowly"

// sessionID finds a session id in a tool result.
var sessionID = regexp.MustCompile(`"session_id":"([^"]+)"`)

// FullPlan is prompt_send, then the other five tools (a tool_call the gate
// allows and one it denies: bash touching denyPath), then the final answer.
func FullPlan(denyPath string) fakemodel.Plan {
	return func(rs []fakemodel.Result) fakemodel.Step {
		sid := "missing"
		if len(rs) > 0 {
			if m := sessionID.FindStringSubmatch(rs[0].Text); m != nil {
				sid = m[1]
			}
		}
		steps := []fakemodel.Step{
			{Tool: "prompt_send", Args: map[string]any{"prompt": Prompt}},
			{Tool: "sessions_list"},
			{Tool: "session_get", Args: map[string]any{"session_id": sid}},
			{Tool: "tools_list"},
			{Tool: "tool_call", Args: map[string]any{"name": "memory_status"}},
			{Tool: "tool_call", Args: map[string]any{"name": "bash", "arguments": map[string]any{"command": "touch " + denyPath}}},
			{Tool: "prompt_cancel", Args: map[string]any{"session_id": sid}},
		}
		if len(rs) < len(steps) {
			return steps[len(rs)]
		}
		return fakemodel.Step{Text: "interop done"}
	}
}

// PromptPlan is one prompt_send, then the final answer.
func PromptPlan(rs []fakemodel.Result) fakemodel.Step {
	if len(rs) == 0 {
		return fakemodel.Step{Tool: "prompt_send", Args: map[string]any{"prompt": Prompt}}
	}
	return fakemodel.Step{Text: "interop done"}
}

// CloseFake stops fake, first logging its exchanges when the test failed.
func CloseFake(t *testing.T, fake *fakemodel.Server) {
	if t.Failed() {
		t.Logf("the model's exchanges:\n%s", fake.Log())
	}
	fake.Close()
}

// ansi matches a terminal colour sequence.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Plain is a client's output without colours.
func Plain(s string) string { return ansi.ReplaceAllString(s, "") }

// Client is one agent client's installation: Setup's, a bin directory for
// PATH, the file the denied bash call must not create, and the long turn's
// text.
type Client struct {
	*e2etest.Install
	Bin      string
	DenyPath string
	LongText string
}

// NewClient makes the installation of Setup whose scripted model answers
// the first prompt with the long turn.
func NewClient(t *testing.T) *Client {
	t.Helper()
	in := Setup(t)
	c := &Client{Install: in, Bin: filepath.Join(in.UserHome, "bin"), DenyPath: filepath.Join(in.UserHome, "denied-marker")}
	if err := os.MkdirAll(c.Bin, 0o700); err != nil {
		t.Fatal(err)
	}
	long := e2etest.Slowly(LongWords, WordDelay)
	c.LongText = long.Text
	in.Script(long)
	return c
}

// Env is the environment every client command gets: the installation's,
// PATH with c.Bin first, the token, and extra.
func (c *Client) Env(extra ...string) []string {
	return c.Install.Env(append([]string{"PATH=" + c.Bin + string(os.PathListSeparator) + os.Getenv("PATH"), "LANG=C.UTF-8",
		e2etest.EnvToken + "=" + c.Token}, extra...)...)
}

// Link puts target on c.Bin as name.
func (c *Client) Link(t *testing.T, target, name string) {
	t.Helper()
	if _, err := os.Stat(target); err != nil {
		// The lock files pin the linux-x64 release binaries.
		e2etest.Missing(t, fmt.Sprintf("no %s binary for this platform (%v)", name, err))
	}
	if err := os.Symlink(target, filepath.Join(c.Bin, name)); err != nil {
		t.Fatal(err)
	}
}

// Run runs argv with env in c.UserHome and returns its output; a failure or
// a time-out fails the test, and so does the token in the output.
func (c *Client) Run(t *testing.T, timeout time.Duration, env []string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = c.UserHome
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %s", filepath.Base(argv[0]), strings.Join(argv[1:min(3, len(argv))], " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out.String())
	}
	if strings.Contains(out.String(), c.Token) {
		t.Errorf("%s printed the token", strings.Join(argv, " "))
	}
	return out.String()
}

// AddTo runs `openprogram mcp install --client client` with env.
func (c *Client) AddTo(t *testing.T, client string, env []string) {
	t.Helper()
	c.Run(t, 2*time.Minute, env, e2etest.BinPath, "mcp", "install", "--client", client)
}

// CheckPrompt checks the first result, the long prompt_send's payload, and
// returns its session id.
func (c *Client) CheckPrompt(t *testing.T, fake *fakemodel.Server) string {
	t.Helper()
	rs := fake.Results()
	if len(rs) == 0 {
		t.Fatalf("the client sent no tool result back; the exchanges:\n%s", fake.Log())
	}
	m := sessionID.FindStringSubmatch(rs[0].Text)
	if m == nil || !strings.Contains(rs[0].Text, c.LongText) || !strings.Contains(rs[0].Text, `"failed":false`) {
		t.Fatalf("the prompt_send result is not the long turn's payload:\n%s", fake.Log())
	}
	return m[1]
}

// CheckFull checks every result of FullPlan, the denied call's missing
// file, the final answer and the audit log.
func (c *Client) CheckFull(t *testing.T, fake *fakemodel.Server) {
	t.Helper()
	sid := c.CheckPrompt(t, fake)
	rs := fake.Results()
	if len(rs) != 7 {
		t.Fatalf("the client sent %d tool results, want 7; the exchanges:\n%s", len(rs), fake.Log())
	}
	want := []struct {
		what     string
		contains []string
		absent   []string
	}{
		1: {"sessions_list", []string{`"id":"` + sid + `"`}, nil},
		2: {"session_get", []string{`"role":"user"`, Prompt, c.LongText}, nil},
		3: {"tools_list", []string{`"name":"memory_status"`, `"inputSchema"`}, []string{`"name":"bash"`}},
		4: {"tool_call memory_status", []string{"{"}, []string{"[denied]"}},
		5: {"tool_call bash", []string{"[denied]"}, nil},
		6: {"prompt_cancel", []string{`"cancelled":false`, sid}, nil},
	}
	for i := 1; i < len(want); i++ {
		w := want[i]
		for _, s := range w.contains {
			if !strings.Contains(rs[i].Text, s) {
				t.Errorf("the %s result lacks %q:\n%s", w.what, s, rs[i].Text)
			}
		}
		for _, s := range w.absent {
			if strings.Contains(rs[i].Text, s) {
				t.Errorf("the %s result holds %q:\n%s", w.what, s, rs[i].Text)
			}
		}
	}
	if _, err := os.Stat(c.DenyPath); !os.IsNotExist(err) {
		t.Errorf("the denied bash call created %s (stat: %v)", c.DenyPath, err)
	}
	ex := fake.Exchanges()
	if last := ex[len(ex)-1]; last.Reply.Text != "interop done" || len(last.Results) != 7 {
		t.Errorf("the client did not come back for the final answer; the exchanges:\n%s", fake.Log())
	}
	tail := c.MustRun("audit", "tail", "-n", "200", "--json")
	if !strings.Contains(tail, `"type":"mcp.tool.denied"`) || !strings.Contains(tail, `"type":"mcp.prompt.completed"`) {
		t.Errorf("the audit log lacks the denial or the completed prompt:\n%s", tail)
	}
	c.VerifyAudit()
}
