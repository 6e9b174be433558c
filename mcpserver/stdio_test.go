package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/schemacheck"
	"github.com/openprogram/openprogram/sessions"
)

// serverCommand returns a command that runs this test binary as an MCP
// server on its stdin and stdout (see TestMain).
func serverCommand(t *testing.T, drain time.Duration, stderr io.Writer) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), runAsServer+"="+drain.String())
	cmd.Stderr = stderr
	return cmd
}

// auditLines parses the "AUDIT " lines the server process wrote to stderr.
func auditLines(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(stderr) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "AUDIT ")
		if !ok {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(rest), &rec); err != nil {
			t.Fatalf("bad audit line %q: %v", line, err)
		}
		out = append(out, rec)
	}
	return out
}

func auditTypes(recs []map[string]any) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r["type"].(string))
	}
	return out
}

// TestStdioWithCommandTransport drives the server as a real process over
// stdio pipes with go-sdk's client, as an MCP host would.
func TestStdioWithCommandTransport(t *testing.T) {
	v, err := schemacheck.New()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := serverCommand(t, 3*time.Second, &stderr)
	rec := &recorder{inner: schemacheck.Wrap(&mcp.CommandTransport{Command: cmd}, v, func(err error) { t.Errorf("schema: %v", err) })}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := contracts.NewClient(cs)
	if v := cs.InitializeResult().ProtocolVersion; v != contracts.ProtocolVersion {
		t.Errorf("negotiated %q", v)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 6 || tools.Tools[0].Name != contracts.SessionsList || tools.Tools[5].Name != contracts.ToolCall {
		t.Errorf("tools/list = %d tools", len(tools.Tools))
	}
	params := &mcp.CallToolParams{Name: contracts.PromptSend, Arguments: contracts.PromptSendArgs{Prompt: "tools"}}
	params.SetProgressToken("e2e")
	raw, err := cs.CallTool(ctx, params)
	if err != nil || raw.IsError {
		t.Fatalf("prompt_send = %v, %v", raw, err)
	}
	var res contracts.PromptSendResult
	if err := contracts.DecodePayload(raw.Content[0].(*mcp.TextContent).Text, &res); err != nil {
		t.Fatal(err)
	}
	if nums, _ := rec.progressOf(t, "e2e"); !slices.Equal(nums, []float64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("progress = %v, want 1..8 before the response", nums)
	}
	list, err := c.SessionsList(ctx)
	if err != nil || len(list) != 1 || list[0].ID != res.SessionID {
		t.Errorf("SessionsList = %v, %v", list, err)
	}
	var te *contracts.ToolError
	if _, err := c.ToolCall(ctx, "read", nil); !errors.As(err, &te) || te.Text != contracts.TextDeniedCapabilityPrefix+"fs.read" {
		t.Errorf("ToolCall(read) = %v", err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("server exit code %d, want 0; stderr:\n%s", code, stderr.String())
	}
	// The prompt_send request and its turn's denied bash call, then
	// tool_call's request and its denied read.
	want := []string{AuditServerStart, sessions.AuditPromptRequested, sessions.AuditToolDenied, sessions.AuditPromptCompleted,
		sessions.AuditToolRequested, sessions.AuditToolDenied, AuditServerStop}
	if got := auditTypes(auditLines(t, stderr.String())); !slices.Equal(got, want) {
		t.Errorf("audit types = %v, want %v", got, want)
	}
}

// TestStdioRawLines writes raw lines to the server process, including bad
// ones, and closes stdin while a turn runs: stdout holds only JSON-RPC
// frames, the session survives every bad line, the running turn is
// cancelled as connection_closed when the drain timeout expires, and the
// process exits 0.
func TestStdioRawLines(t *testing.T) {
	v, err := schemacheck.New()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := serverCommand(t, 200*time.Millisecond, &stderr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	var raw bytes.Buffer
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(io.TeeReader(stdout, &raw))
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stdout closed early")
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no line from the server")
			return ""
		}
	}
	methods := map[string]string{}
	exchange := func(line string, id string, method string) string {
		t.Helper()
		if id != "" {
			methods[id] = method
		}
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
		got := next()
		if err := v.ServerFrame([]byte(got), methods[id]); err != nil {
			t.Error(err)
		}
		return got
	}
	exchange(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, "1", "initialize")
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, want string }{
		{`{bad json`, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error: line is not valid JSON"}}`},
		{`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: batches are not supported"}}`},
		{`{"hello":"world"}`, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: \"jsonrpc\" must be \"2.0\""}}`},
		{`{"jsonrpc":"2.0","id":3,"method":"ping"}`, `{"jsonrpc":"2.0","id":3,"result":{}}`},
	} {
		if got := exchange(tc.line, "", ""); got != tc.want {
			t.Errorf("for %s the server wrote\n%s\nwant\n%s", tc.line, got, tc.want)
		}
	}
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"block"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the turn start
	stdin.Close()
	exited := make(chan error, 1)
	go func() { <-readDone; exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("server exit: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the server did not exit after stdin closed")
	}
	for l := range lines {
		t.Errorf("the server wrote after stdin closed: %s", l)
	}
	for line := range strings.Lines(raw.String()) {
		if !json.Valid([]byte(line)) {
			t.Errorf("stdout line is not JSON: %q", line)
		}
	}
	var cancelled []map[string]any
	for _, r := range auditLines(t, stderr.String()) {
		if r["type"] == sessions.AuditRequestCancelled {
			cancelled = append(cancelled, r)
		}
	}
	if len(cancelled) != 1 || !strings.Contains(string(mustJSON(t, cancelled[0]["payload"])), `"reason":"connection_closed"`) {
		t.Errorf("cancellation audit = %v, want one connection_closed record", cancelled)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
