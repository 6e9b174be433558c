package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/sessions"
)

// sessions_list returns at most sessionsListLimit (100) sessions, however
// many the store holds.
func TestSessionsListIsCappedAt100(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		base := time.Unix(1_700_000_000, 0)
		for i := range 150 {
			at := base.Add(time.Duration(i) * time.Second)
			if _, err := e.store.CreateSession(t.Context(), sessions.Session{ID: fmt.Sprintf("s%03d", i), CreatedAt: at, UpdatedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		text, isErr := resultText(t, s.call(1, contracts.SessionsList, map[string]any{}))
		var list []contracts.SessionSummary
		if err := json.Unmarshal([]byte(text), &list); err != nil || isErr {
			t.Fatalf("sessions_list = %q (isError %v): %v", text, isErr, err)
		}
		if len(list) != 100 || list[0].ID != "s149" || list[99].ID != "s050" {
			t.Errorf("sessions_list returned %d sessions (first %q), want the 100 most recent, s149 first", len(list), list[0].ID)
		}
	})
}

// Cancelling a prompt declines every question pending on its session, also
// one the turn did not raise and did not cancel itself (the fake turn never
// does): mcpserver's own questions.CancelSession call.
func TestPromptCancelCancelsTheSessionsQuestions(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		q, err := e.questions.Register(questions.Question{SessionID: firstSession, Kind: questions.KindAsk, Prompt: "?"})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the connection has seen question.asked while nothing ran
		if got := s.call("p1", contracts.PromptSend, map[string]any{"prompt": "block"}); len(got) != 0 {
			t.Fatalf("blocked prompt_send answered early: %v", got)
		}
		if n := len(e.questions.Pending(firstSession)); n != 1 {
			t.Fatalf("%d questions pending before the cancel, want 1", n)
		}
		s.call(2, contracts.PromptCancel, map[string]any{"session_id": firstSession})
		if p := e.questions.Pending(firstSession); len(p) != 0 {
			t.Errorf("after prompt_cancel %d questions still pending on the session (%v), want none", len(p), q.ID())
		}
	})
}

// Once the turn has committed its final write, a late prompt_cancel finds
// nothing to cancel: cancelled:false, the prompt_send gets its result, and
// no mcp.request.cancelled record is written for a turn that completed.
func TestPromptCancelAfterTheCommitPoint(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		if got := s.call("p1", contracts.PromptSend, map[string]any{"prompt": "commit-wait"}); len(got) != 0 {
			t.Fatalf("prompt_send answered before its turn returned: %v", got)
		}
		text, isErr := resultText(t, s.call(2, contracts.PromptCancel, map[string]any{"session_id": firstSession}))
		if isErr || !strings.Contains(text, `"cancelled":false`) {
			t.Errorf("prompt_cancel after the commit point = %s (isError %v), want cancelled:false", text, isErr)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		text, isErr = resultText(t, s.frames())
		if isErr || !strings.Contains(text, "echo: commit-wait") {
			t.Errorf("prompt_send after a late prompt_cancel = %s (isError %v), want its result", text, isErr)
		}
		if got := e.store.auditOf(sessions.AuditRequestCancelled); len(got) != 0 {
			t.Errorf("a completed turn was audited as cancelled: %v", got)
		}
		if got := e.store.auditOf(sessions.AuditPromptCompleted); len(got) != 1 {
			t.Errorf("prompt completed records = %v, want one", got)
		}
	})
}

// A gate denial inside a prompt_send turn is audited by mcpserver, with or
// without a progress token, in the same payload as a tool_call denial plus
// in_turn, on the turn's session.
func TestTurnDenialsAreAudited(t *testing.T) {
	session(t, nil, func(t *testing.T, e *env, s *stepper) {
		if _, isErr := resultText(t, s.call(1, contracts.PromptSend, map[string]any{"prompt": "tools"})); isErr {
			t.Fatal("prompt_send failed")
		}
		s.call(2, contracts.ToolCall, map[string]any{"name": "read"})
		want := []map[string]any{
			{"tool": "bash", "reason_code": authz.ReasonHardConstraint, "capability": string(authz.CapProcessExec), "client_id": testClientID, "in_turn": true},
			{"tool": "read", "reason_code": authz.ReasonCapability, "capability": string(authz.CapFSRead), "client_id": testClientID},
		}
		if diff := cmp.Diff(want, e.store.auditOf(sessions.AuditToolDenied)); diff != "" {
			t.Errorf("denial audit (-want +got):\n%s", diff)
		}
		var sessionsOf []string
		for _, r := range e.store.allAudit() {
			if r.Type == sessions.AuditToolDenied {
				sessionsOf = append(sessionsOf, r.SessionID+"|"+r.Origin)
			}
		}
		if diff := cmp.Diff([]string{firstSession + "|mcp/" + testClientID, "|mcp/" + testClientID}, sessionsOf); diff != "" {
			t.Errorf("denial records' session|origin (-want +got):\n%s", diff)
		}
	})
}
