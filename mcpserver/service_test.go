package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/sessions"
)

// session runs fn against a fresh environment inside a synctest bubble,
// after the handshake. Each sent line is followed by synctest.Wait.
func session(t *testing.T, tweak func(*envConfig), fn func(t *testing.T, e *env, s *stepper)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		e, err := newEnv(tweak)
		if err != nil {
			t.Fatal(err)
		}
		w := startWire(t.Context(), t, e)
		s := &stepper{t: t, w: w}
		for _, l := range handshake {
			s.send(l)
		}
		s.w.take()
		fn(t, e, s)
		if err := w.close(); err != nil {
			t.Errorf("Serve = %v after EOF, want nil", err)
		}
	})
}

type stepper struct {
	t *testing.T
	w *wire
}

func (s *stepper) send(line string) {
	s.t.Helper()
	s.w.send(line)
	synctest.Wait()
}

// call sends a tools/call and returns the frames written since.
func (s *stepper) call(id any, tool string, args any, meta ...string) []map[string]any {
	s.t.Helper()
	params := map[string]any{"name": tool, "arguments": args}
	if len(meta) > 0 {
		params["_meta"] = map[string]any{"progressToken": meta[0]}
	}
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	if err != nil {
		s.t.Fatal(err)
	}
	s.send(string(line))
	return s.frames()
}

func (s *stepper) frames() []map[string]any {
	s.t.Helper()
	var out []map[string]any
	for _, f := range s.w.take() {
		var m map[string]any
		if err := json.Unmarshal(f, &m); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// resultText returns the text and isError of a single tools/call result
// frame.
func resultText(t *testing.T, frames []map[string]any) (string, bool) {
	t.Helper()
	if len(frames) != 1 {
		t.Fatalf("got %d frames, want one result: %v", len(frames), frames)
	}
	res, ok := frames[0]["result"].(map[string]any)
	if !ok {
		t.Fatalf("frame is not a result: %v", frames[0])
	}
	content := res["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("result has %d content blocks, want 1: %v", len(content), res)
	}
	isErr, _ := res["isError"].(bool)
	return content[0].(map[string]any)["text"].(string), isErr
}

func errorCode(t *testing.T, frames []map[string]any) (float64, string) {
	t.Helper()
	if len(frames) != 1 {
		t.Fatalf("got %d frames, want one error: %v", len(frames), frames)
	}
	e, ok := frames[0]["error"].(map[string]any)
	if !ok {
		t.Fatalf("frame is not an error: %v", frames[0])
	}
	return e["code"].(float64), e["message"].(string)
}

const firstSession = "mcp_00000000000000000000000000000001"

func TestCancellationAuditAndCleanup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel func(s *stepper) []map[string]any
		reason string
	}{
		{"notifications/cancelled", func(s *stepper) []map[string]any {
			s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"p1"}}`)
			return s.frames()
		}, conversation.ReasonRequestCancelled},
		{"prompt_cancel", func(s *stepper) []map[string]any {
			return s.call(2, contracts.PromptCancel, map[string]any{"session_id": firstSession})
		}, conversation.ReasonPromptCancel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			session(t, nil, func(t *testing.T, e *env, s *stepper) {
				if got := s.call("p1", contracts.PromptSend, map[string]any{"prompt": "block-write"}); len(got) != 0 {
					t.Fatalf("blocked prompt_send answered early: %v", got)
				}
				// A question raised on another session stays open.
				other, err := e.questions.Register(questions.Question{SessionID: "elsewhere", Kind: questions.KindAsk, Prompt: "?"})
				if err != nil {
					t.Fatal(err)
				}
				if got := tc.cancel(s); len(got) == 0 || !cmp.Equal(got[0]["error"], map[string]any{"code": float64(0), "message": "Request cancelled"}) {
					t.Errorf("after the cancellation the server wrote %v, want the code-0 error first", got)
				}
				if !e.store.hasSession(firstSession) {
					t.Error("session with a written user message was deleted")
				}
				if e.store.leaseHeld(firstSession) {
					t.Error("turn lease still held after cancellation")
				}
				want := []map[string]any{{
					"request_id": "p1", "session_id": firstSession, "client_id": testClientID, "reason": tc.reason,
				}}
				if diff := cmp.Diff(want, e.store.auditOf(sessions.AuditRequestCancelled)); diff != "" {
					t.Errorf("cancellation audit (-want +got):\n%s", diff)
				}
				if got := e.store.auditOf(sessions.AuditPromptCompleted); len(got) != 0 {
					t.Errorf("a cancelled prompt was audited as completed: %v", got)
				}
				if len(e.questions.Pending("elsewhere")) != 1 {
					t.Error("a question of another session was resolved")
				}
				e.questions.Resolve(other.ID(), questions.Answer{Status: questions.StatusDeclined})
				// The session is free again.
				text, isErr := resultText(t, s.call(3, contracts.PromptSend, map[string]any{"prompt": "again", "session_id": firstSession}))
				if isErr || !strings.Contains(text, "echo: again") {
					t.Errorf("prompt_send after cancellation = %q (isError %v)", text, isErr)
				}
			})
		})
	}
}

func TestConnectionClosedCancelsRunningTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := newEnv(nil)
		if err != nil {
			t.Fatal(err)
		}
		w := startWire(t.Context(), t, e)
		for _, l := range handshake {
			w.send(l)
			synctest.Wait()
		}
		w.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"block"}}}`)
		synctest.Wait()
		if err := w.close(); err != nil {
			t.Fatalf("Serve = %v, want nil", err)
		}
		for _, f := range w.all() {
			if strings.Contains(string(f), `"id":7`) {
				t.Errorf("a response for the cancelled request was written: %s", f)
			}
		}
		want := []map[string]any{{
			"request_id": float64(7), "session_id": firstSession, "client_id": testClientID, "reason": conversation.ReasonConnectionClosed,
		}}
		if diff := cmp.Diff(want, e.store.auditOf(sessions.AuditRequestCancelled)); diff != "" {
			t.Errorf("cancellation audit (-want +got):\n%s", diff)
		}
		if e.store.hasSession(firstSession) {
			t.Error("the empty session of the cancelled turn was left behind")
		}
		var types []string
		for _, r := range e.store.allAudit() {
			types = append(types, r.Type)
		}
		wantTypes := []string{AuditServerStart, sessions.AuditPromptRequested, sessions.AuditRequestCancelled, AuditServerStop}
		if diff := cmp.Diff(wantTypes, types); diff != "" {
			t.Errorf("audit record types (-want +got):\n%s", diff)
		}
		if got := e.store.auditOf(AuditServerStop); len(got) != 1 || got[0]["reason"] != "eof" {
			t.Errorf("stop audit = %v, want reason eof", got)
		}
	})
}

func TestAuditNeverHoldsPromptTextOrContent(t *testing.T) {
	const secret = "zebra-secret-prompt"
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		s.call(1, contracts.PromptSend, map[string]any{"prompt": secret})
		s.call(2, contracts.PromptSend, map[string]any{"prompt": "block"})
		s.call(3, contracts.PromptCancel, map[string]any{"session_id": "mcp_00000000000000000000000000000002"})
		s.call(4, contracts.ToolCall, map[string]any{"name": "bash", "arguments": map[string]any{"command": secret}})
		s.call(5, contracts.ToolCall, map[string]any{"name": "memory_grep"})
		for _, r := range e.store.allAudit() {
			if strings.Contains(string(r.Payload), secret) || strings.Contains(string(r.Payload), "echo:") {
				t.Errorf("audit record %s holds prompt text or content: %s", r.Type, r.Payload)
			}
		}
		if got := e.store.auditOf(sessions.AuditPromptCompleted); !cmp.Equal(got, []map[string]any{{
			"request_id": float64(1), "session_id": firstSession, "client_id": testClientID, "failed": false,
		}}) {
			t.Errorf("completed audit = %v", got)
		}
		if got := e.store.auditOf(sessions.AuditToolDenied); !cmp.Equal(got, []map[string]any{{
			"tool": "bash", "reason_code": authz.ReasonHardConstraint, "capability": string(authz.CapProcessExec), "client_id": testClientID,
		}}) {
			t.Errorf("denial audit = %v", got)
		}
	})
}

func TestGateDenialsNeverRunTheTool(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		for i, name := range []string{"bash", "read", "memory_update", "custom_probe"} {
			text, isErr := resultText(t, s.call(i, contracts.ToolCall, map[string]any{"name": name}))
			if !isErr || !strings.HasPrefix(text, "[denied] ") {
				t.Errorf("tool_call %s = %q (isError %v), want a denial", name, text, isErr)
			}
			if n := e.tools[name].timesRun(); n != 0 {
				t.Errorf("denied tool %s ran %d times", name, n)
			}
		}
		s.call(9, contracts.ToolCall, map[string]any{"name": "memory_search", "arguments": map[string]any{"query": "q"}})
		if n := e.tools["memory_search"].timesRun(); n != 0 {
			t.Errorf("memory_search (rule ask) ran %d times", n)
		}
		if n := len(e.questions.Pending("")); n != 0 {
			t.Errorf("%d approval questions were opened", n)
		}
		for _, name := range []string{"memory_promote", "write"} {
			if code, _ := errorCode(t, s.call(name, contracts.ToolCall, map[string]any{"name": name})); code != -32601 {
				t.Errorf("tool_call %s: code %v, want -32601", name, code)
			}
		}
		if n := e.tools["memory_promote"].timesRun(); n != 0 {
			t.Errorf("unexposed memory_promote ran %d times", n)
		}
	})
}

func TestTurnsRunWithTheFixedAuthority(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		// A second connection's clientInfo or a request's _meta cannot
		// change anything: the authority comes from Options alone.
		s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hi"},"_meta":{"authority_tier":"owner","source":"cli"}}}`)
		calls := e.turns.calls()
		if len(calls) != 1 {
			t.Fatalf("%d turns ran, want 1", len(calls))
		}
		want, err := authz.NewMCPClient(testClientID, testPrincipal, authz.Scope{})
		if err != nil {
			t.Fatal(err)
		}
		got := calls[0].Speaker
		if got.Authority() != want.Authority() || got.Source() != authz.SourceMCP || got.Mode() != authz.ModeAsk {
			t.Errorf("turn speaker authority = %+v source %q mode %q, want %+v mcp ask", got.Authority(), got.Source(), got.Mode(), want.Authority())
		}
		if !slices.Equal(got.WorkDirs(), []string{testWorkDir}) || !slices.Equal(got.Rules().List(), testRules) {
			t.Errorf("turn speaker workdirs %v rules %v", got.WorkDirs(), got.Rules().List())
		}
	})
}

func TestQuestionsOfActiveTurnsAreDeclined(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		text, _ := resultText(t, s.call(1, contracts.PromptSend, map[string]any{"prompt": "ask"}))
		var res contracts.PromptSendResult
		if err := contracts.DecodePayload(text, &res); err != nil {
			t.Fatal(err)
		}
		if res.Text != "question declined" {
			t.Errorf("turn saw %q, want the question declined", res.Text)
		}
		// No MCP turn runs on this session now: its questions are left alone.
		p, err := e.questions.Register(questions.Question{SessionID: firstSession, Kind: questions.KindAsk, Prompt: "later?"})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if len(e.questions.Pending(firstSession)) != 1 {
			t.Error("a question on a session without an active MCP turn was resolved")
		}
		e.questions.Resolve(p.ID(), questions.Answer{Status: questions.StatusCancelled})
	})
}

func TestStoreFailures(t *testing.T) {
	boom := errors.New("disk on fire")
	tests := []struct {
		name   string
		break_ func(*memStore)
		tool   string
		args   map[string]any
		want   string
	}{
		{"list", func(m *memStore) { m.failList = boom }, contracts.SessionsList, map[string]any{}, `{"error":"session data unavailable"}`},
		{"get", func(m *memStore) { m.failGet = boom }, contracts.SessionGet, map[string]any{"session_id": "x"}, `{"error":"session data unavailable"}`},
		{"branch", func(m *memStore) { m.failBranch = boom }, contracts.SessionGet, map[string]any{"session_id": "seeded"}, `{"error":"session data unavailable"}`},
		{"create", func(m *memStore) { m.failCreate = boom }, contracts.PromptSend, map[string]any{"prompt": "p"}, `{"error":"prompt execution failed","reason":"session_unavailable"}`},
		{"panic", func(m *memStore) { m.panicList = true }, contracts.SessionsList, map[string]any{}, contracts.TextToolExecutionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			session(t, nil, func(t *testing.T, e *env, s *stepper) {
				e.store.sessions["seeded"] = seededSession()
				tt.break_(e.store)
				text, isErr := resultText(t, s.call(1, tt.tool, tt.args))
				if text != tt.want || !isErr {
					t.Errorf("%s = %q (isError %v), want %q as an error", tt.tool, text, isErr, tt.want)
				}
				if got := s.call(2, contracts.ToolsList, map[string]any{}); len(got) != 1 {
					t.Errorf("the server did not go on after the failure: %v", got)
				}
			})
		})
	}
}

func TestFailedTurnOnNewSessionLeavesNoOrphan(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		text, isErr := resultText(t, s.call(1, contracts.PromptSend, map[string]any{"prompt": "error"}))
		if !isErr || text != `{"error":"prompt execution failed"}` {
			t.Errorf("prompt_send = %q (isError %v)", text, isErr)
		}
		if e.store.hasSession(firstSession) {
			t.Error("the new session of a failed turn was left behind")
		}
	})
}

func TestBusySessionAcrossProcesses(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		e.store.sessions["seeded"] = seededSession()
		// Another process holds the lease.
		e.store.leases["seeded"] = "other-process"
		text, isErr := resultText(t, s.call(1, contracts.PromptSend, map[string]any{"prompt": "hi", "session_id": "seeded"}))
		if !isErr || text != `{"error":"prompt execution failed","reason":"session_busy"}` {
			t.Errorf("prompt_send on a busy session = %q (isError %v)", text, isErr)
		}
		if !e.store.hasSession("seeded") {
			t.Error("an existing session was deleted")
		}
	})
}

func seededSession() sessions.Session {
	return sessions.Session{ID: "seeded", AgentID: "researcher", Title: "seeded", Source: "cli"}
}

func TestPromptSendKeepsTheSessionsAgent(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		e.store.sessions["seeded"] = seededSession()
		resultText(t, s.call(1, contracts.PromptSend, map[string]any{"prompt": "new"}))
		resultText(t, s.call(2, contracts.PromptSend, map[string]any{"prompt": "old", "session_id": "seeded"}))
		created := e.store.sessions[firstSession]
		if created.AgentID != conversation.Agent || created.Source != authz.SourceMCP || created.Title != "new" {
			t.Errorf("created session = %+v, want agent main, source mcp, title new", created)
		}
		if got := e.store.sessions["seeded"].AgentID; got != "researcher" {
			t.Errorf("existing session's agent = %q, want researcher", got)
		}
	})
}

func TestNewRefusesAnythingButTheMCPClientAuthority(t *testing.T) {
	// Every field of a speaker was checked by authz when it was made (its
	// tests try the forged tiers, client ids and rules); the server takes
	// only a speaker authz made, and only an MCP client's.
	owner, err := authz.NewOwner(testPrincipal, false, authz.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		tweak func(*envConfig)
	}{
		{"the owner's speaker", func(o *envConfig) { o.Speaker = owner }},
		{"a speaker authz did not make", func(o *envConfig) { o.Speaker = authz.Speaker{} }},
		{"no store", func(o *envConfig) { o.Store = nil }},
		{"no runtime", func(o *envConfig) { o.Runtime = nil }},
		{"empty exposed name", func(o *envConfig) { o.ExposedTools = []string{""} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := newEnv(tt.tweak); err == nil {
				t.Error("New succeeded")
			}
		})
	}
	if _, err := newEnv(nil); err != nil {
		t.Errorf("New with the test options: %v", err)
	}
}

func TestEmptyExposedToolsExposesNothing(t *testing.T) {
	session(t, func(o *envConfig) { o.ExposedTools = nil }, func(t *testing.T, e *env, s *stepper) {
		if text, _ := resultText(t, s.call(1, contracts.ToolsList, map[string]any{})); text != "[]" {
			t.Errorf("tools_list = %s, want []", text)
		}
		if code, msg := errorCode(t, s.call(2, contracts.ToolCall, map[string]any{"name": "memory_status"})); code != -32601 || msg != contracts.TextRuntimeToolNotFound {
			t.Errorf("tool_call = %v %q, want -32601", code, msg)
		}
	})
}

func TestServeStopsWhenTheContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := newEnv(nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		w := startWire(ctx, t, e)
		for _, l := range handshake {
			w.send(l)
			synctest.Wait()
		}
		w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"block-write"}}}`)
		synctest.Wait()
		cancel()
		if err := <-w.served; !errors.Is(err, context.Canceled) {
			t.Errorf("Serve = %v, want context.Canceled", err)
		}
		<-w.readerDone
		w.inW.Close()
		if got := e.store.auditOf(sessions.AuditRequestCancelled); len(got) != 1 || got[0]["reason"] != conversation.ReasonConnectionClosed {
			t.Errorf("cancellation audit = %v, want connection_closed", got)
		}
		if got := e.store.auditOf(AuditServerStop); len(got) != 1 || got[0]["reason"] != "cancelled" {
			t.Errorf("stop audit = %v, want reason cancelled", got)
		}
		for _, f := range w.all() {
			if strings.Contains(string(f), `"id":1`) {
				t.Errorf("the cancelled request was answered: %s", f)
			}
		}
	})
}

func TestServeReportsABrokenStdout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := newEnv(nil)
		if err != nil {
			t.Fatal(err)
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		outR.Close() // nobody reads stdout
		served := make(chan error, 1)
		go func() { served <- e.srv.Serve(t.Context(), inR, outW) }()
		go func() { _, _ = io.WriteString(inW, handshake[0]+"\n") }()
		err = <-served
		if err == nil || !strings.Contains(err.Error(), "write to stdout") {
			t.Errorf("Serve = %v, want a write failure", err)
		}
		if got := e.store.auditOf(AuditServerStop); len(got) != 1 || got[0]["reason"] != "error" {
			t.Errorf("stop audit = %v, want reason error", got)
		}
	})
}

func TestClientInfoIsOnlyLogged(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	session(t, func(o *envConfig) { o.Logger = logger }, func(t *testing.T, e *env, s *stepper) {
		mu.Lock()
		got := logs.String()
		mu.Unlock()
		if !strings.Contains(got, "client_name=wire-test") || !strings.Contains(got, "client_id="+testClientID) {
			t.Errorf("log lacks the client diagnostics:\n%s", got)
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestPanickingTurnIsAnExecutionError(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		text, isErr := resultText(t, s.call(1, contracts.PromptSend, map[string]any{"prompt": "panic"}))
		if !isErr || text != `{"error":"prompt execution failed"}` {
			t.Errorf("prompt_send = %q (isError %v)", text, isErr)
		}
		if e.store.leaseHeld(firstSession) || e.store.hasSession(firstSession) {
			t.Error("the panicking turn left its lease or its empty session behind")
		}
		if got := s.call(2, contracts.SessionsList, map[string]any{}); len(got) != 1 {
			t.Errorf("the server did not go on: %v", got)
		}
	})
}
