package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/schemacheck"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/sessions"
)

// recorder is a client transport that keeps every message the client reads.
type recorder struct {
	inner mcp.Transport

	mu     sync.Mutex
	msgs   []jsonrpc.Message
	tokens map[string]jsonrpc.ID // progress token -> request id
}

func (r *recorder) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Connection: c, r: r}, nil
}

type recordingConn struct {
	mcp.Connection
	r *recorder
}

func (c *recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		var p struct {
			Meta struct {
				Token any `json:"progressToken"`
			} `json:"_meta"`
		}
		if json.Unmarshal(req.Params, &p) == nil && p.Meta.Token != nil {
			c.r.mu.Lock()
			if c.r.tokens == nil {
				c.r.tokens = map[string]jsonrpc.ID{}
			}
			c.r.tokens[fmt.Sprint(p.Meta.Token)] = req.ID
			c.r.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

// progressOf returns, in wire order, the progress numbers and messages
// read for the request that carried token. It fails the test if one of
// them arrived after that request's response, or if no response arrived.
func (r *recorder) progressOf(t *testing.T, token string) ([]float64, []string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	id, ok := r.tokens[token]
	if !ok {
		t.Fatalf("no request carried progress token %q", token)
	}
	var nums []float64
	var msgs []string
	answered := false
	for _, m := range r.msgs {
		switch m := m.(type) {
		case *jsonrpc.Response:
			if m.ID == id {
				answered = true
			}
		case *jsonrpc.Request:
			if m.Method != "notifications/progress" {
				continue
			}
			var p mcp.ProgressNotificationParams
			if err := json.Unmarshal(m.Params, &p); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(p.ProgressToken) != token {
				continue
			}
			if answered {
				t.Errorf("progress %v %q arrived after the response", p.Progress, p.Message)
			}
			nums = append(nums, p.Progress)
			msgs = append(msgs, p.Message)
		}
	}
	if !answered {
		t.Errorf("the request with progress token %q was not answered", token)
	}
	return nums, msgs
}

func (c *recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.r.mu.Lock()
		c.r.msgs = append(c.r.msgs, msg)
		c.r.mu.Unlock()
	}
	return msg, err
}

// clientConn is a go-sdk client connected in-process to Serve.
type clientConn struct {
	cs     *mcp.ClientSession
	c      *contracts.Client
	rec    *recorder
	served chan error
}

// connect serves one connection of e.srv and connects a go-sdk client with
// the given clientInfo name to it. Every frame the client reads is checked
// against the MCP schema.
func connect(t *testing.T, e *env, name string) *clientConn {
	t.Helper()
	v, err := schemacheck.New()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	cc := &clientConn{served: make(chan error, 1)}
	go func() {
		err := e.srv.Serve(context.Background(), inR, outW)
		outW.Close()
		cc.served <- err
	}()
	cc.rec = &recorder{inner: schemacheck.Wrap(&mcp.IOTransport{Reader: outR, Writer: inW}, v, func(err error) { t.Errorf("schema: %v", err) })}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "9.9"}, &mcp.ClientOptions{
		ProgressNotificationHandler: contracts.HandleProgress,
	})
	cs, err := client.Connect(t.Context(), cc.rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc.cs = cs
	cc.c = contracts.NewClient(cs)
	t.Cleanup(func() { cc.close(t) })
	return cc
}

func (cc *clientConn) close(t *testing.T) {
	t.Helper()
	if cc.cs == nil {
		return
	}
	cc.cs.Close()
	cc.cs = nil
	select {
	case err := <-cc.served:
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("Serve did not return after the client closed")
	}
}

// progressCount counts the progress notifications read so far.
func (r *recorder) progressCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == "notifications/progress" {
			n++
		}
	}
	return n
}

func newTestEnv(t *testing.T) *env {
	t.Helper()
	e, err := newEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestClientHandshakeAndIdentity(t *testing.T) {
	e := newTestEnv(t)
	var lists [][]string
	for _, name := range []string{"claude-ish", "owner"} {
		cc := connect(t, e, name)
		init := cc.cs.InitializeResult()
		if init.ProtocolVersion != contracts.ProtocolVersion {
			t.Errorf("negotiated %q, want %q", init.ProtocolVersion, contracts.ProtocolVersion)
		}
		if init.ServerInfo.Name != ServerName || init.ServerInfo.Version != "1.2.3-test" {
			t.Errorf("serverInfo = %+v", init.ServerInfo)
		}
		if caps, err := json.Marshal(init.Capabilities); err != nil || string(caps) != `{"tools":{}}` {
			t.Errorf("capabilities = %s, want tools only", caps)
		}
		tools, err := cc.cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		if !slices.Equal(names, contracts.Names()) {
			t.Errorf("tools/list = %v, want %v", names, contracts.Names())
		}
		rt, err := cc.c.ToolsList(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var rnames []string
		for _, r := range rt {
			rnames = append(rnames, r.Name)
		}
		lists = append(lists, rnames)
		if _, err := cc.c.PromptSend(t.Context(), contracts.PromptSendArgs{Prompt: "who am I"}); err != nil {
			t.Fatal(err)
		}
		cc.close(t)
	}
	want := []string{"memory_status", "memory_get", "memory_search", "memory_grep", "memory_browse", "memory_update"}
	for i, l := range lists {
		if !slices.Equal(l, want) {
			t.Errorf("client %d: tools_list = %v, want %v", i, l, want)
		}
	}
	calls := e.turns.calls()
	if len(calls) != 2 || calls[0].Speaker.Authority() != calls[1].Speaker.Authority() || calls[0].Speaker.ID() != "mcp/"+testClientID {
		t.Errorf("turn authorities differ by clientInfo or are wrong: %+v", calls)
	}
	for _, r := range e.store.allAudit() {
		if r.Origin != "mcp/"+testClientID {
			t.Errorf("audit origin %q, want mcp/%s", r.Origin, testClientID)
		}
	}
}

func TestClientSixTools(t *testing.T) {
	e := newTestEnv(t)
	cc := connect(t, e, "six")
	ctx := t.Context()
	list, err := cc.c.SessionsList(ctx)
	if err != nil || len(list) != 0 {
		t.Fatalf("SessionsList = %v, %v; want empty", list, err)
	}
	sent, err := cc.c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if sent.SessionID != firstSession || sent.Text != "echo: hello" || sent.Failed || sent.AssistantMsgID == "" {
		t.Errorf("PromptSend = %+v", sent)
	}
	msgs, err := cc.c.SessionGet(ctx, sent.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Content != "hello" || msgs[1].ID != sent.AssistantMsgID {
		t.Errorf("SessionGet = %+v", msgs)
	}
	cancelled, err := cc.c.PromptCancel(ctx, sent.SessionID)
	if err != nil || cancelled.Cancelled {
		t.Errorf("PromptCancel of a finished turn = %+v, %v; want cancelled false", cancelled, err)
	}
	content, err := cc.c.ToolCall(ctx, "memory_get", map[string]any{"path": "a"})
	if err != nil {
		t.Fatal(err)
	}
	img, ok := content[1].(*mcp.ImageContent)
	if len(content) != 2 || !ok || img.MIMEType != "image/png" || !slices.Equal(img.Data, pngBytes) {
		t.Errorf("ToolCall(memory_get) = %#v, want text and the PNG", content)
	}

	var te *contracts.ToolError
	if _, err := cc.c.SessionGet(ctx, "nope"); !errors.As(err, &te) || te.Payload == nil || te.Payload.Error != contracts.TextSessionNotFound {
		t.Errorf("SessionGet(nope) = %v, want ToolError session not found", err)
	}
	var pe *contracts.ProtocolError
	if _, err := cc.c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "x", SessionID: "nope"}); !errors.As(err, &pe) || pe.Code != -32602 || pe.Message != contracts.TextInvalidPromptSession {
		t.Errorf("PromptSend(unknown session) = %v, want -32602 %q", err, contracts.TextInvalidPromptSession)
	}
	if _, err := cc.c.ToolCall(ctx, "memory_promote", nil); !errors.As(err, &pe) || pe.Code != -32601 || pe.Message != contracts.TextRuntimeToolNotFound {
		t.Errorf("ToolCall(unexposed) = %v, want -32601", err)
	}
	if _, err := cc.c.ToolCall(ctx, "bash", map[string]any{"command": "id"}); !errors.As(err, &te) || te.Text != contracts.TextDeniedHardConstraint {
		t.Errorf("ToolCall(bash) = %v, want the hard-constraint denial", err)
	}
	if n := e.tools["bash"].timesRun(); n != 0 {
		t.Errorf("bash ran %d times", n)
	}
	_, err = cc.cs.CallTool(ctx, &mcp.CallToolParams{Name: "not_a_wrapper", Arguments: map[string]any{}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32601 {
		t.Errorf("CallTool(not_a_wrapper) = %v, want -32601", err)
	}
	_, err = cc.cs.CallTool(ctx, &mcp.CallToolParams{Name: contracts.SessionGet, Arguments: map[string]any{"session_id": " "}})
	if !errors.As(err, &werr) || werr.Code != -32602 || werr.Message != "invalid arguments at $.session_id: pattern" {
		t.Errorf("CallTool(session_get blank) = %v, want -32602 pattern", err)
	}
}

// TestClientProgress checks progress on the wire, in the order the client
// read it: go-sdk's client hands notifications to its handler goroutine but
// delivers responses directly, so a callback (contracts.WithProgress) may
// see the result before the last notifications.
func TestClientProgress(t *testing.T) {
	e := newTestEnv(t)
	cc := connect(t, e, "progress")
	ctx := t.Context()
	call := func(token, tool string, args map[string]any) {
		t.Helper()
		params := &mcp.CallToolParams{Name: tool, Arguments: args}
		if token != "" {
			params.SetProgressToken(token)
		}
		if _, err := cc.cs.CallTool(ctx, params); err != nil {
			t.Fatal(err)
		}
	}
	call("t1", contracts.ToolCall, map[string]any{"name": "memory_status"})
	nums, msgs := cc.rec.progressOf(t, "t1")
	if !slices.Equal(nums, []float64{1, 2}) || !slices.Equal(msgs, []string{"counting sources", "counting pages"}) {
		t.Errorf("tool_call progress = %v %v", nums, msgs)
	}
	call("t2", contracts.PromptSend, map[string]any{"prompt": "tools"})
	nums, msgs = cc.rec.progressOf(t, "t2")
	wantMsgs := []string{"turn started", "tool memory_status started", "tool memory_status finished: ok",
		"tool memory_grep started", "tool memory_grep finished: error",
		"tool bash started", "tool bash finished: denied", "turn finished"}
	if !slices.Equal(msgs, wantMsgs) || !slices.Equal(nums, []float64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("prompt_send progress = %v %v, want %v numbered 1..8", nums, msgs, wantMsgs)
	}
	before := cc.rec.progressCount()
	call("", contracts.PromptSend, map[string]any{"prompt": "tools"})
	call("", contracts.ToolCall, map[string]any{"name": "memory_status"})
	if _, err := cc.c.SessionsList(ctx); err != nil { // a round trip: everything before it was read
		t.Fatal(err)
	}
	if n := cc.rec.progressCount() - before; n != 0 {
		t.Errorf("%d progress notifications without a progress token", n)
	}
}

// waitStarted returns once a fake turn has started.
func waitStarted(t *testing.T, started chan string) string {
	t.Helper()
	select {
	case id := <-started:
		return id
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not start")
		return ""
	}
}

func TestClientCancellation(t *testing.T) {
	e := newTestEnv(t)
	e.turns.started = make(chan string, 1)
	cc := connect(t, e, "cancel")
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := cc.c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "block-write"})
		errc <- err
	}()
	sessionID := waitStarted(t, e.turns.started)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("PromptSend after cancel = %v, want context.Canceled", err)
	}
	// go-sdk's client retires the call at once; the server still answers it
	// with the code-0 error, never a result.
	waitFor(t, "the cancellation audit record", func() bool { return len(e.store.auditOf(sessions.AuditRequestCancelled)) == 1 })
	waitFor(t, "the cancellation response", func() bool {
		_, err := cc.c.SessionsList(t.Context()) // a round trip: everything before it was read
		return err == nil && cc.rec.cancelledResponses() == 1
	})
	got := e.store.auditOf(sessions.AuditRequestCancelled)[0]
	if got["reason"] != conversation.ReasonRequestCancelled || got["session_id"] != sessionID || got["client_id"] != testClientID {
		t.Errorf("audit = %v", got)
	}
	if e.store.leaseHeld(sessionID) {
		t.Error("the turn lease is still held")
	}
	// The session is usable again at once.
	if res, err := cc.c.PromptSend(t.Context(), contracts.PromptSendArgs{Prompt: "again", SessionID: sessionID}); err != nil || res.Text != "echo: again" {
		t.Errorf("PromptSend after cancellation = %+v, %v", res, err)
	}
}

// cancelledResponses counts code-0 "Request cancelled" responses read.
func (r *recorder) cancelledResponses() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		resp, ok := m.(*jsonrpc.Response)
		if !ok {
			continue
		}
		var werr *jsonrpc.Error
		if errors.As(resp.Error, &werr) && werr.Code == 0 && werr.Message == contracts.TextRequestCancelled {
			if resp.Result != nil {
				return -1
			}
			n++
		}
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestClientPromptCancelOwnership(t *testing.T) {
	e := newTestEnv(t)
	e.turns.started = make(chan string, 1)
	a := connect(t, e, "owner-of-the-turn")
	b := connect(t, e, "someone-else")
	errc := make(chan error, 1)
	go func() {
		_, err := a.c.PromptSend(t.Context(), contracts.PromptSendArgs{Prompt: "block"})
		errc <- err
	}()
	sessionID := waitStarted(t, e.turns.started)

	res, err := b.c.PromptCancel(t.Context(), sessionID)
	if err != nil || res.Cancelled {
		t.Fatalf("PromptCancel from another connection = %+v, %v; want cancelled false", res, err)
	}
	select {
	case err := <-errc:
		t.Fatalf("another connection's prompt_cancel ended the turn: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	res, err = a.c.PromptCancel(t.Context(), sessionID)
	if err != nil || !res.Cancelled || res.SessionID != sessionID {
		t.Fatalf("PromptCancel from the owner = %+v, %v; want cancelled true", res, err)
	}
	var pe *contracts.ProtocolError
	if err := <-errc; !errors.As(err, &pe) || pe.Code != 0 || pe.Message != contracts.TextRequestCancelled {
		t.Errorf("the cancelled PromptSend = %v, want protocol error 0 %q", err, contracts.TextRequestCancelled)
	}
	if got := e.store.auditOf(sessions.AuditRequestCancelled); len(got) != 1 || got[0]["reason"] != conversation.ReasonPromptCancel {
		t.Errorf("audit = %v, want one prompt_cancel record", got)
	}
}

func TestClientQuestionsNeverBlock(t *testing.T) {
	e := newTestEnv(t)
	cc := connect(t, e, "questions")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	res, err := cc.c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "ask"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "question declined" {
		t.Errorf("the turn's question got %q, want declined", res.Text)
	}
	// memory_search has an "ask" rule: denied at once, no question opened.
	var te *contracts.ToolError
	if _, err := cc.c.ToolCall(ctx, "memory_search", map[string]any{"query": "q"}); !errors.As(err, &te) || te.Text != contracts.TextDeniedApprovalUnavailable {
		t.Errorf("ToolCall(memory_search) = %v, want the approval denial", err)
	}
}

func TestClientRuntimeToolResultsPassThroughOnly(t *testing.T) {
	e := newTestEnv(t)
	cc := connect(t, e, "results")
	res, err := cc.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: contracts.ToolCall, Arguments: map[string]any{"name": "memory_grep"}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || strings.Contains(string(data), "secret internal detail") || strings.Contains(string(data), "trace") {
		t.Errorf("failed runtime tool result = %s, want only %q", data, contracts.TextRuntimeToolFailed)
	}
	want := []mcp.Content{&mcp.TextContent{Text: contracts.TextRuntimeToolFailed}}
	if diff := cmp.Diff(want, res.Content); diff != "" {
		t.Errorf("content (-want +got):\n%s", diff)
	}
}
