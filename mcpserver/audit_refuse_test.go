package mcpserver

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/sessions"
)

// refusingAuditStore refuses every audit append, as a store whose audit
// insert fails (a full disk, a tampered head) does.
type refusingAuditStore struct {
	*memStore
}

var errAuditRefused = errors.New("audit insert refused")

func (s *refusingAuditStore) AppendAudit(context.Context, sessions.NewAuditRecord) (sessions.AuditRecord, error) {
	return sessions.AuditRecord{}, errAuditRefused
}

func refuseAudit(o *envConfig) { o.Store = &refusingAuditStore{memStore: o.Store.(*memStore)} }

// TestUnauditableRequestsAreRefused: a prompt_send or tool_call whose
// audit record cannot be written is refused before any side effect: no
// session, no turn, no message, no tool run.
func TestUnauditableRequestsAreRefused(t *testing.T) {
	session(t, refuseAudit, func(t *testing.T, e *env, s *stepper) {
		e.store.sessions["seeded"] = seededSession()
		const refusedPrompt = `{"error":"prompt execution failed","reason":"audit_unavailable"}`
		text, isErr := resultText(t, s.call(1, contracts.PromptSend, map[string]any{"prompt": "hi"}))
		if !isErr || text != refusedPrompt {
			t.Errorf("prompt_send (new session) = %q (isError %v), want %s", text, isErr, refusedPrompt)
		}
		text, isErr = resultText(t, s.call(2, contracts.PromptSend, map[string]any{"prompt": "hi", "session_id": "seeded"}))
		if !isErr || text != refusedPrompt {
			t.Errorf("prompt_send (existing session) = %q (isError %v), want %s", text, isErr, refusedPrompt)
		}
		if n := len(e.turns.calls()); n != 0 {
			t.Errorf("%d turns ran without their audit record", n)
		}
		if e.store.hasSession(firstSession) {
			t.Error("a session was created without its audit record")
		}
		if len(e.store.messages) != 0 {
			t.Errorf("%d messages were written without their audit record", len(e.store.messages))
		}
		text, isErr = resultText(t, s.call(3, contracts.ToolCall, map[string]any{"name": "memory_status"}))
		if !isErr || text != contracts.TextAuditUnavailable {
			t.Errorf("tool_call = %q (isError %v), want %q", text, isErr, contracts.TextAuditUnavailable)
		}
		if n := e.tools["memory_status"].timesRun(); n != 0 {
			t.Errorf("memory_status ran %d times without its audit record", n)
		}
		// Reads stay available: they have no side effect to audit.
		if text, isErr := resultText(t, s.call(4, contracts.SessionsList, map[string]any{})); isErr {
			t.Errorf("sessions_list = %q, want the list", text)
		}
	})
}

// TestUnauditableRequestsRunUnderAuditLog: with AuditLog (config
// audit.on_failure = log) the same requests run, unaudited.
func TestUnauditableRequestsRunUnderAuditLog(t *testing.T) {
	logOnly := func(o *envConfig) {
		refuseAudit(o)
		o.OnAuditFailure = conversation.AuditLog
	}
	session(t, logOnly, func(t *testing.T, e *env, s *stepper) {
		if text, isErr := resultText(t, s.call(1, contracts.PromptSend, map[string]any{"prompt": "hi"})); isErr {
			t.Errorf("prompt_send = %q, want the turn's result", text)
		}
		if n := len(e.turns.calls()); n != 1 {
			t.Errorf("%d turns ran, want 1", n)
		}
		if text, isErr := resultText(t, s.call(2, contracts.ToolCall, map[string]any{"name": "memory_status"})); isErr {
			t.Errorf("tool_call = %q, want the tool's result", text)
		}
		if n := e.tools["memory_status"].timesRun(); n != 1 {
			t.Errorf("memory_status ran %d times, want 1", n)
		}
	})
}

// TestRequestRecordsComeFirst: each prompt_send and tool_call is audited
// before it runs, naming the request, never the prompt or the arguments.
func TestRequestRecordsComeFirst(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		resultText(t, s.call(1, contracts.PromptSend, map[string]any{"prompt": "secret prompt"}))
		resultText(t, s.call("t", contracts.ToolCall, map[string]any{"name": "memory_status", "arguments": map[string]any{}}))
		var types []string
		for _, r := range e.store.allAudit() {
			types = append(types, r.Type)
			if strings.Contains(string(r.Payload), "secret") {
				t.Errorf("audit record %s holds the prompt: %s", r.Type, r.Payload)
			}
		}
		want := []string{AuditServerStart, sessions.AuditPromptRequested, sessions.AuditPromptCompleted, sessions.AuditToolRequested}
		if !slices.Equal(types, want) {
			t.Errorf("audit records = %v, want %v", types, want)
		}
		if got := e.store.auditOf(sessions.AuditPromptRequested); len(got) != 1 || got[0]["session_id"] != firstSession || got[0]["new_session"] != true || got[0]["request_id"] != float64(1) {
			t.Errorf("prompt request record = %v", got)
		}
		if got := e.store.auditOf(sessions.AuditToolRequested); len(got) != 1 || got[0]["tool"] != "memory_status" || got[0]["request_id"] != "t" || got[0]["client_id"] != testClientID {
			t.Errorf("tool request record = %v", got)
		}
	})
}
