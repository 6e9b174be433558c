package contracts_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
)

// connect starts srv on in-memory transports and returns a client session
// whose mcp.Client routes progress through contracts.HandleProgress. Both
// ends are closed when the test ends.
func connect(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server Connect: %v", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "contracts-test", Version: "v0"},
		&mcp.ClientOptions{ProgressNotificationHandler: contracts.HandleProgress})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client Connect: %v", err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("client session Close: %v", err)
		}
		_ = ss.Wait() // returns the closed connection's error
	})
	return cs
}

func TestClientNegotiatesBaseline(t *testing.T) {
	cs := connect(t, newCannedServer(nil))
	if got := cs.InitializeResult().ProtocolVersion; got != contracts.ProtocolVersion {
		t.Errorf("negotiated protocol version = %q, want %q", got, contracts.ProtocolVersion)
	}
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	// go-sdk v1.8.0 lists tools sorted by name, not in registration order;
	// the server keeps the contract's order by answering tools/list itself.
	// Here only the set and the schemas are checked.
	got := map[string]string{}
	for _, tool := range res.Tools {
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatalf("marshal input schema of %s: %v", tool.Name, err)
		}
		got[tool.Name] = string(schema)
	}
	want := map[string]string{}
	for _, name := range contracts.Names() {
		schema, _ := contracts.InputSchema(name)
		want[name] = string(schema)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools/list over the wire mismatch (-want +got):\n%s", diff)
	}
}

func TestClientSuccess(t *testing.T) {
	ctx := context.Background()
	c := contracts.NewClient(connect(t, newCannedServer(nil)))

	sessions, err := c.SessionsList(ctx)
	if err != nil {
		t.Fatalf("SessionsList: %v", err)
	}
	if diff := cmp.Diff([]contracts.SessionSummary{{ID: sessionOK, Title: "Greeting", UpdatedAt: 1700000000}}, sessions); diff != "" {
		t.Errorf("SessionsList mismatch (-want +got):\n%s", diff)
	}

	msgs, err := c.SessionGet(ctx, sessionOK)
	if err != nil {
		t.Fatalf("SessionGet: %v", err)
	}
	wantMsgs := []contracts.Message{
		{ID: "m1", Role: "user", Content: "Say hello", Timestamp: 1700000000},
		{ID: "m2", Role: "assistant", Content: "Hello! 👋", Timestamp: 1700000001},
	}
	if diff := cmp.Diff(wantMsgs, msgs); diff != "" {
		t.Errorf("SessionGet mismatch (-want +got):\n%s", diff)
	}

	sent, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hi"})
	if err != nil {
		t.Fatalf("PromptSend: %v", err)
	}
	wantSent := contracts.PromptSendResult{SessionID: sessionOK, Text: "Hello! You said: hi", AssistantMsgID: "m2"}
	if diff := cmp.Diff(wantSent, sent); diff != "" {
		t.Errorf("PromptSend mismatch (-want +got):\n%s", diff)
	}

	for id, want := range map[string]bool{sessionRunning: true, sessionOK: false} {
		got, err := c.PromptCancel(ctx, id)
		if err != nil {
			t.Fatalf("PromptCancel(%q): %v", id, err)
		}
		if diff := cmp.Diff(contracts.PromptCancelResult{SessionID: id, Cancelled: want}, got); diff != "" {
			t.Errorf("PromptCancel(%q) mismatch (-want +got):\n%s", id, diff)
		}
	}

	tools, err := c.ToolsList(ctx)
	if err != nil {
		t.Fatalf("ToolsList: %v", err)
	}
	wantTools := []contracts.RuntimeTool{{
		Name: "memory_search", Description: "Search memory.",
		InputSchema: []byte(`{"properties":{"query":{"type":"string"}},"required":["query"],"type":"object"}`),
	}}
	if diff := cmp.Diff(wantTools, tools); diff != "" {
		t.Errorf("ToolsList mismatch (-want +got):\n%s", diff)
	}

	content, err := c.ToolCall(ctx, "echo", map[string]any{"b": "é<>", "a": 1})
	if err != nil {
		t.Fatalf("ToolCall(echo): %v", err)
	}
	if diff := cmp.Diff([]mcp.Content{&mcp.TextContent{Text: `{"a":1,"b":"é<>"}`}}, content); diff != "" {
		t.Errorf("ToolCall(echo) mismatch (-want +got):\n%s", diff)
	}
	content, err = c.ToolCall(ctx, "echo", nil)
	if err != nil {
		t.Fatalf("ToolCall(echo, nil): %v", err)
	}
	if diff := cmp.Diff([]mcp.Content{&mcp.TextContent{Text: `{}`}}, content); diff != "" {
		t.Errorf("ToolCall(echo, nil) mismatch (-want +got):\n%s", diff)
	}
	content, err = c.ToolCall(ctx, "screenshot", nil)
	if err != nil {
		t.Fatalf("ToolCall(screenshot): %v", err)
	}
	wantContent := []mcp.Content{&mcp.TextContent{Text: "one image"}, &mcp.ImageContent{Data: pngBytes, MIMEType: "image/png"}}
	if diff := cmp.Diff(wantContent, content); diff != "" {
		t.Errorf("ToolCall(screenshot) mismatch (-want +got):\n%s", diff)
	}
}

// TestClientErrors covers the error matrix as a client sees it: isError
// results become *ToolError, JSON-RPC errors *ProtocolError with the code.
func TestClientErrors(t *testing.T) {
	ctx := context.Background()
	c := contracts.NewClient(connect(t, newCannedServer(nil)))
	tests := []struct {
		name      string
		call      func() error
		wantTool  *contracts.ToolError
		wantProto *contracts.ProtocolError
	}{
		{
			name:     "session not found",
			call:     func() error { _, err := c.SessionGet(ctx, sessionMissing); return err },
			wantTool: &contracts.ToolError{Text: `{"error":"session not found"}`, Payload: &contracts.ErrorPayload{Error: contracts.TextSessionNotFound}},
		},
		{
			name:     "session data unavailable",
			call:     func() error { _, err := c.SessionGet(ctx, sessionBroken); return err },
			wantTool: &contracts.ToolError{Text: `{"error":"session data unavailable"}`, Payload: &contracts.ErrorPayload{Error: contracts.TextSessionDataUnavailable}},
		},
		{
			name: "prompt execution failed with reason",
			call: func() error {
				_, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hi", SessionID: sessionBusy})
				return err
			},
			wantTool: &contracts.ToolError{
				Text:    `{"error":"prompt execution failed","reason":"session_busy"}`,
				Payload: &contracts.ErrorPayload{Error: contracts.TextPromptExecutionFailed, Reason: "session_busy"},
			},
		},
		{
			name: "invalid MCP prompt session",
			call: func() error {
				_, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hi", SessionID: sessionUnknown})
				return err
			},
			wantProto: &contracts.ProtocolError{Code: -32602, Message: contracts.TextInvalidPromptSession},
		},
		{
			name: "request cancelled",
			call: func() error {
				_, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hi", SessionID: sessionCancel})
				return err
			},
			wantProto: &contracts.ProtocolError{Code: 0, Message: contracts.TextRequestCancelled},
		},
		{
			name:      "blank prompt fails the schema",
			call:      func() error { _, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: " \t"}); return err },
			wantProto: &contracts.ProtocolError{Code: -32602, Message: "invalid arguments at $.prompt: pattern"},
		},
		{
			name:      "empty session id fails the schema",
			call:      func() error { _, err := c.PromptCancel(ctx, ""); return err },
			wantProto: &contracts.ProtocolError{Code: -32602, Message: "invalid arguments at $.session_id: minLength"},
		},
		{
			// The handler answers -32601 "runtime tool not exposed; tools_list lists the exposed ones",
			// but go-sdk v1.8.0's jsonrpc2 layer rewrites the message of every
			// -32601 a handler returns (see nomethodnotfoundcodeinerror in
			// internal/jsonrpc2/conn.go); only the code survives the SDK. The
			// server must write that response below go-sdk to keep the text.
			name:      "runtime tool not found",
			call:      func() error { _, err := c.ToolCall(ctx, "no_such_tool", nil); return err },
			wantProto: &contracts.ProtocolError{Code: -32601, Message: `method not found: "tools/call"`},
		},
		{
			name:      "invalid runtime tool arguments",
			call:      func() error { _, err := c.ToolCall(ctx, "memory_search", map[string]any{"query": 1}); return err },
			wantProto: &contracts.ProtocolError{Code: -32602, Message: contracts.TextInvalidRuntimeToolArguments},
		},
		{
			name:     "hard constraint denial",
			call:     func() error { _, err := c.ToolCall(ctx, "bash", map[string]any{"command": "ls"}); return err },
			wantTool: &contracts.ToolError{Text: contracts.TextDeniedHardConstraint},
		},
		{
			name:     "capability denial",
			call:     func() error { _, err := c.ToolCall(ctx, "read", map[string]any{"path": "x"}); return err },
			wantTool: &contracts.ToolError{Text: "[denied] authority tier does not allow fs.read"},
		},
		{
			name:     "runtime tool failed",
			call:     func() error { _, err := c.ToolCall(ctx, "failing", nil); return err },
			wantTool: &contracts.ToolError{Text: contracts.TextRuntimeToolFailed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			var te *contracts.ToolError
			var pe *contracts.ProtocolError
			switch {
			case tt.wantTool != nil:
				if !errors.As(err, &te) {
					t.Fatalf("error = %v (%T), want a *contracts.ToolError", err, err)
				}
				if diff := cmp.Diff(tt.wantTool, te); diff != "" {
					t.Errorf("ToolError mismatch (-want +got):\n%s", diff)
				}
				if errors.As(err, &pe) {
					t.Errorf("error %v is also a *ProtocolError", err)
				}
			case tt.wantProto != nil:
				if !errors.As(err, &pe) {
					t.Fatalf("error = %v (%T), want a *contracts.ProtocolError", err, err)
				}
				if diff := cmp.Diff(tt.wantProto, pe); diff != "" {
					t.Errorf("ProtocolError mismatch (-want +got):\n%s", diff)
				}
				if errors.As(err, &te) {
					t.Errorf("error %v is also a *ToolError", err)
				}
			}
		})
	}
}

func TestClientErrorStrings(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&contracts.ToolError{Text: "[denied] hard constraint"}, "openprogram tool error: [denied] hard constraint"},
		{&contracts.ToolError{Text: `{"error":"session not found"}`, Payload: &contracts.ErrorPayload{Error: "session not found"}},
			"openprogram tool error: session not found"},
		{&contracts.ToolError{Payload: &contracts.ErrorPayload{Error: "prompt execution failed", Reason: "session_busy"}},
			"openprogram tool error: prompt execution failed (session_busy)"},
		{&contracts.ProtocolError{Code: -32601, Message: "runtime tool not exposed; tools_list lists the exposed ones"},
			"openprogram protocol error -32601: runtime tool not exposed; tools_list lists the exposed ones"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%#v.Error() = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// A result that is not one JSON text is neither a ToolError nor a
// ProtocolError: it means the server broke the contract.
func TestClientUnexpectedResult(t *testing.T) {
	ctx := context.Background()
	c := contracts.NewClient(connect(t, newCannedServer(nil)))
	for _, id := range []string{sessionTwo, sessionImage, sessionNotJSON} {
		_, err := c.SessionGet(ctx, id)
		if err == nil {
			t.Errorf("SessionGet(%q) succeeded, want an error", id)
			continue
		}
		var te *contracts.ToolError
		var pe *contracts.ProtocolError
		if errors.As(err, &te) || errors.As(err, &pe) {
			t.Errorf("SessionGet(%q) = %v (%T), want an error that is neither ToolError nor ProtocolError", id, err, err)
		}
	}
}

func TestClientContextCancelled(t *testing.T) {
	started := make(chan struct{})
	srv := newCannedServer(map[string]handler{
		contracts.PromptSend: func(ctx context.Context, _ *mcp.CallToolRequest, _ contracts.Args) (*mcp.CallToolResult, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	})
	c := contracts.NewClient(connect(t, srv))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "wait"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("PromptSend with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestClientProgress(t *testing.T) {
	ctx := context.Background()
	c := contracts.NewClient(connect(t, newCannedServer(nil)))

	type update struct {
		Progress float64
		Message  string
	}
	var mu sync.Mutex
	var got []update
	record := contracts.WithProgress(func(p float64, msg string) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, update{p, msg})
	})

	if _, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hi"}, record); err != nil {
		t.Fatalf("PromptSend: %v", err)
	}
	if _, err := c.ToolCall(ctx, "echo", nil, record); err != nil {
		t.Fatalf("ToolCall: %v", err)
	}
	// Without WithProgress the server gets no token and sends nothing.
	if _, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hi"}); err != nil {
		t.Fatalf("PromptSend: %v", err)
	}
	want := []update{
		{1, "turn started"}, {2, "tool memory_search finished"}, {3, "turn finished"},
		{1, "reading"}, {2, "done"},
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress mismatch (-want +got):\n%s", diff)
	}
}

// Two sessions calling at once each see only their own progress.
func TestClientProgressIsolated(t *testing.T) {
	ctx := context.Background()
	var wg sync.WaitGroup
	results := make([][]string, 4)
	clients := make([]*contracts.Client, len(results))
	for i := range clients {
		clients[i] = contracts.NewClient(connect(t, newCannedServer(nil)))
	}
	for i, c := range clients {
		wg.Go(func() {
			for range 3 {
				_, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hi"},
					contracts.WithProgress(func(_ float64, msg string) { results[i] = append(results[i], msg) }))
				if err != nil {
					t.Errorf("PromptSend: %v", err)
				}
			}
		})
	}
	wg.Wait()
	one := []string{"turn started", "tool memory_search finished", "turn finished"}
	want := slices.Concat(one, one, one)
	for i, got := range results {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("client %d progress mismatch (-want +got):\n%s", i, diff)
		}
	}
}

// HandleProgress ignores what it did not issue and tolerates nil input.
func TestHandleProgressIgnoresForeign(t *testing.T) {
	ctx := context.Background()
	contracts.HandleProgress(ctx, nil)
	contracts.HandleProgress(ctx, &mcp.ProgressNotificationClientRequest{})
	contracts.HandleProgress(ctx, &mcp.ProgressNotificationClientRequest{Params: &mcp.ProgressNotificationParams{ProgressToken: 7}})
	contracts.HandleProgress(ctx, &mcp.ProgressNotificationClientRequest{Params: &mcp.ProgressNotificationParams{ProgressToken: "openprogram-contracts-1"}})
}
