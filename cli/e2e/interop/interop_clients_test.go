package interop

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
	"sync"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/e2e/fakemodel"
	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
)

// The real MCP clients, each installed from npm at the version pinned in
// interop/<client>/package-lock.json, added with `openprogram mcp install`
// and driven by a fake of its vendor's model API (package fakemodel) through
// a plan of tool calls. Every client's first call is a prompt_send whose
// turn the scripted model streams for about interopLongTurn, so each client
// also shows it waits out a long turn; the clients run concurrently.

// interopLongWords and interopWordDelay make the long prompt_send turn.
const (
	interopLongWords = 90
	interopWordDelay = time.Second
)

// interopPrompt is what the plan's prompt_send asks.
const interopPrompt = "interop: walk slowly"

// interopSessionID finds a session id in a tool result.
var interopSessionID = regexp.MustCompile(`"session_id":"([^"]+)"`)

// interopFullPlan is prompt_send, then the other five tools (a tool_call
// the gate allows and one it denies: bash touching denyPath), then the
// final answer.
func interopFullPlan(denyPath string) fakemodel.Plan {
	return func(rs []fakemodel.Result) fakemodel.Step {
		sid := "missing"
		if len(rs) > 0 {
			if m := interopSessionID.FindStringSubmatch(rs[0].Text); m != nil {
				sid = m[1]
			}
		}
		steps := []fakemodel.Step{
			{Tool: "prompt_send", Args: map[string]any{"prompt": interopPrompt}},
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

// interopPromptPlan is one prompt_send, then the final answer.
func interopPromptPlan(rs []fakemodel.Result) fakemodel.Step {
	if len(rs) == 0 {
		return fakemodel.Step{Tool: "prompt_send", Args: map[string]any{"prompt": interopPrompt}}
	}
	return fakemodel.Step{Text: "interop done"}
}

// interopClose stops fake, first logging its exchanges when the test failed.
func interopClose(t *testing.T, fake *fakemodel.Server) {
	if t.Failed() {
		t.Logf("the model's exchanges:\n%s", fake.Log())
	}
	fake.Close()
}

// interopANSI matches a terminal colour sequence.
var interopANSI = regexp.MustCompile("\x1b\\[[0-9;]*m")

// interopPlain is a client's output without colours.
func interopPlain(s string) string { return interopANSI.ReplaceAllString(s, "") }

// interopClient is one client's state: the OpenProgram state dir, a bin
// directory for PATH, and the files the test checks.
type interopClient struct {
	interopState
	bin      string
	denyPath string
	longText string
}

// newInteropClient makes the state dir of interopSetup whose scripted model
// answers the first prompt with the long turn.
func newInteropClient(t *testing.T) *interopClient {
	t.Helper()
	st := interopSetup(t)
	c := &interopClient{interopState: st, bin: filepath.Join(st.userHome, "bin"), denyPath: filepath.Join(st.userHome, "denied-marker")}
	if err := os.MkdirAll(c.bin, 0o700); err != nil {
		t.Fatal(err)
	}
	words := make([]string, interopLongWords)
	for i := range words {
		words[i] = fmt.Sprintf("step%d", i)
	}
	c.longText = strings.Join(words, " ")
	data, err := json.Marshal(scripted.Script{Turns: []scripted.Turn{{Text: c.longText, DelayMS: int(interopWordDelay / time.Millisecond)}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(st.home, "long-script.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	st.cli(t, "config", "set", "model.script", path)
	return c
}

// env is the environment every client command gets: PATH with c.bin first,
// the private HOME, the state dir and the token, and extra.
func (c *interopClient) env(extra ...string) []string {
	env := []string{"PATH=" + c.bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + c.userHome, "LANG=C.UTF-8",
		"OPENPROGRAM_HOME=" + c.home, "OPENPROGRAM_MCP_TOKEN=" + c.token}
	return append(env, extra...)
}

// link puts target on c.bin as name.
func (c *interopClient) link(t *testing.T, target, name string) {
	t.Helper()
	if _, err := os.Stat(target); err != nil {
		// The lock files pin the linux-x64 release binaries.
		e2etest.Missing(t, fmt.Sprintf("no %s binary for this platform (%v)", name, err))
	}
	if err := os.Symlink(target, filepath.Join(c.bin, name)); err != nil {
		t.Fatal(err)
	}
}

// run runs argv with env in dir (c.userHome when ""), and returns its
// output; a failure or a time-out fails the test.
func (c *interopClient) run(t *testing.T, timeout time.Duration, env []string, argv ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = c.userHome
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %s", filepath.Base(argv[0]), strings.Join(argv[1:min(3, len(argv))], " "), time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out.String())
	}
	if strings.Contains(out.String(), c.token) {
		t.Errorf("%s printed the token", strings.Join(argv, " "))
	}
	return out.String()
}

// install runs `openprogram mcp install --client client` with env.
func (c *interopClient) install(t *testing.T, client string, env []string) {
	t.Helper()
	c.run(t, 2*time.Minute, env, e2etest.BinPath, "mcp", "install", "--client", client)
}

// checkPrompt checks the first result: the long prompt_send's payload.
func (c *interopClient) checkPrompt(t *testing.T, fake *fakemodel.Server) string {
	t.Helper()
	rs := fake.Results()
	if len(rs) == 0 {
		t.Fatalf("the client sent no tool result back; the exchanges:\n%s", fake.Log())
	}
	m := interopSessionID.FindStringSubmatch(rs[0].Text)
	if m == nil || !strings.Contains(rs[0].Text, c.longText) || !strings.Contains(rs[0].Text, `"failed":false`) {
		t.Fatalf("the prompt_send result is not the long turn's payload:\n%s", fake.Log())
	}
	return m[1]
}

// checkFull checks every result of interopFullPlan.
func (c *interopClient) checkFull(t *testing.T, fake *fakemodel.Server) {
	t.Helper()
	sid := c.checkPrompt(t, fake)
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
		2: {"session_get", []string{`"role":"user"`, interopPrompt, c.longText}, nil},
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
	if _, err := os.Stat(c.denyPath); !os.IsNotExist(err) {
		t.Errorf("the denied bash call created %s (stat: %v)", c.denyPath, err)
	}
	ex := fake.Exchanges()
	if last := ex[len(ex)-1]; last.Reply.Text != "interop done" || len(last.Results) != 7 {
		t.Errorf("the client did not come back for the final answer; the exchanges:\n%s", fake.Log())
	}
	tail := c.cli(t, "audit", "tail", "-n", "200", "--json")
	if !strings.Contains(tail, `"type":"mcp.tool.denied"`) || !strings.Contains(tail, `"type":"mcp.prompt.completed"`) {
		t.Errorf("the audit log lacks the denial or the completed prompt:\n%s", tail)
	}
	if verify := c.cli(t, "audit", "verify"); !strings.HasPrefix(verify, "audit log intact:") {
		t.Errorf("openprogram audit verify = %q", verify)
	}
}

func TestInteropClients(t *testing.T) {
	// Not parallel with the other interop tests: the four clients already
	// run at once, and with more load on two cores a client's first model
	// request can go out before its race-enabled server has connected
	// (Claude Code then offers no openprogram tools). The other three run
	// together after it.
	e2etest.RequireTool(t, "node")
	npm := e2etest.RequireTool(t, "npm")
	root := interopRoot(t)
	clients := []struct {
		name string
		run  func(t *testing.T, dir string)
	}{
		{"claude-code", interopClaudeCode},
		{"codex", interopCodex},
		{"opencode", interopOpencode},
		{"gemini", interopGemini},
	}
	// All at once, whatever -parallel says: each mostly waits out the
	// long turn, and one after another they would take minutes.
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Go(func() {
			t.Run(cl.name, func(t *testing.T) {
				dir := filepath.Join(root, cl.name)
				e2etest.NpmCI(t, npm, dir)
				start := time.Now()
				cl.run(t, dir)
				t.Logf("%s took %s", cl.name, time.Since(start).Round(time.Second))
			})
		})
	}
	wg.Wait()
}

// interopClaudeCode: install runs the real `claude mcp add`, `claude mcp
// list` connects, and `claude -p` against the fake Messages API calls all
// six tools.
func interopClaudeCode(t *testing.T, dir string) {
	c := newInteropClient(t)
	c.link(t, filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude"), "claude")
	fake := fakemodel.NewAnthropic(interopFullPlan(c.denyPath))
	defer interopClose(t, fake)
	env := c.env("ANTHROPIC_BASE_URL="+fake.URL, "ANTHROPIC_API_KEY=fake-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "MCP_TIMEOUT=120000",
		// Load the MCP tools up front: with tool search the model would first
		// have to look them up.
		"ENABLE_TOOL_SEARCH=false")
	c.install(t, "claude-code", env)
	claude := filepath.Join(c.bin, "claude")
	list := c.run(t, 3*time.Minute, env, claude, "mcp", "list")
	if !regexp.MustCompile(`(?m)^openprogram: .*Connected`).MatchString(list) {
		t.Fatalf("claude mcp list does not show openprogram connected:\n%s", list)
	}
	out := c.run(t, 8*time.Minute, env, claude, "-p", "Use the openprogram tools as planned.",
		"--allowedTools", "mcp__openprogram", "--output-format", "text")
	if !strings.Contains(out, "interop done") {
		t.Errorf("claude -p printed %q, want the fake's final answer", out)
	}
	c.checkFull(t, fake)
}

// interopCodex: install writes config.toml, and `codex exec` with a model
// provider pointing at the fake Responses API calls all six tools.
func interopCodex(t *testing.T, dir string) {
	c := newInteropClient(t)
	fake := fakemodel.NewResponses(interopFullPlan(c.denyPath))
	defer interopClose(t, fake)
	codexHome := filepath.Join(c.userHome, "codex-home")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	provider := "model = \"fake\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"" + fake.URL +
		"/v1\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(provider), 0o600); err != nil {
		t.Fatal(err)
	}
	env := c.env("CODEX_HOME=" + codexHome)
	c.install(t, "codex", env)
	codex := filepath.Join(dir, "node_modules", "@openai", "codex", "bin", "codex.js")
	// codex exec cannot ask, and Codex asks before every MCP tool that is
	// not read-only; install leaves that to the user, the test approves.
	// Without required, a server slower to start than Codex's 10 s start-up
	// timeout (the race-enabled binary on a loaded machine) would leave
	// Codex running silently without our tools.
	out := c.run(t, 8*time.Minute, env, "node", codex, "exec", "--skip-git-repo-check",
		"-c", `mcp_servers.openprogram.default_tools_approval_mode="approve"`,
		"-c", "mcp_servers.openprogram.required=true", "-c", "mcp_servers.openprogram.startup_timeout_sec=120",
		"Use the openprogram tools as planned.")
	if !strings.Contains(out, "interop done") {
		t.Errorf("codex exec printed %q, want the fake's final answer", out)
	}
	c.checkFull(t, fake)
}

// interopOpencode: install merges the mcp entry into an opencode.json that
// already names a provider (the fake Chat Completions API), `opencode mcp
// list` connects, and `opencode run` calls prompt_send.
func interopOpencode(t *testing.T, dir string) {
	c := newInteropClient(t)
	c.link(t, filepath.Join(dir, "node_modules", "opencode-linux-x64", "bin", "opencode"), "opencode")
	fake := fakemodel.NewChatCompletions(interopPromptPlan)
	defer interopClose(t, fake)
	cfgDir := filepath.Join(c.userHome, ".config", "opencode")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `{
  "$schema": "https://opencode.ai/config.json",
  "model": "fake/fake",
  "provider": {
    "fake": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Fake",
      "options": {"baseURL": "` + fake.URL + `/v1", "apiKey": "fake-key"},
      "models": {"fake": {"name": "Fake", "tool_call": true}}
    }
  }
}
`
	if err := os.WriteFile(filepath.Join(cfgDir, "opencode.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := c.env("OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_CLAUDE_CODE=1")
	c.install(t, "opencode", env)
	opencode := filepath.Join(c.bin, "opencode")
	list := c.run(t, 3*time.Minute, env, opencode, "mcp", "list")
	if !regexp.MustCompile(`(?m)✓ openprogram connected$`).MatchString(interopPlain(list)) {
		t.Fatalf("opencode mcp list does not show openprogram connected:\n%s", list)
	}
	out := c.run(t, 8*time.Minute, env, opencode, "run", "--model", "fake/fake", "Use the openprogram tools as planned.")
	if !strings.Contains(out, "interop done") {
		t.Errorf("opencode run printed %q, want the fake's final answer", out)
	}
	c.checkPrompt(t, fake)
}

// interopGemini: install writes settings.json with the token named in env
// (Gemini CLI hides *TOKEN* variables otherwise), `gemini mcp list`
// connects, and `gemini -p` against the fake Gemini API calls prompt_send.
func interopGemini(t *testing.T, dir string) {
	c := newInteropClient(t)
	fake := fakemodel.NewGemini(interopPromptPlan)
	defer interopClose(t, fake)
	env := c.env("GOOGLE_GEMINI_BASE_URL="+fake.URL, "GEMINI_API_KEY=fake-key", "GEMINI_CLI_NO_RELAUNCH=true")
	// The API key method (pointed at the fake by GOOGLE_GEMINI_BASE_URL);
	// install keeps this setting.
	settings := filepath.Join(c.userHome, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"security": {"auth": {"selectedType": "gemini-api-key"}}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.install(t, "gemini", env)
	// Gemini CLI starts no server in a folder the user has not trusted.
	trust, err := json.Marshal(map[string]string{c.userHome: "TRUST_FOLDER"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.userHome, ".gemini", "trustedFolders.json"), trust, 0o600); err != nil {
		t.Fatal(err)
	}
	gemini := filepath.Join(dir, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	list := c.run(t, 3*time.Minute, env, "node", gemini, "mcp", "list")
	if !regexp.MustCompile(`(?m)^✓ openprogram: .* - Connected$`).MatchString(interopPlain(list)) {
		t.Fatalf("gemini mcp list does not show openprogram connected:\n%s", list)
	}
	out := c.run(t, 8*time.Minute, env, "node", gemini, "-p", "Use the openprogram tools as planned.", "--approval-mode", "yolo")
	if !strings.Contains(out, "interop done") {
		t.Errorf("gemini -p printed %q, want the fake's final answer", out)
	}
	c.checkPrompt(t, fake)
}
