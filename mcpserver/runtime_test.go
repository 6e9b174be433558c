package mcpserver

import (
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// withRuntime replaces the fake turns with the real runtime answering from
// a scripted model.
func withRuntime(t *testing.T, script string) func(*envConfig) {
	t.Helper()
	s, err := scripted.Parse([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	return func(o *envConfig) {
		o.Runtime = runtime.New(runtime.Options{
			Store: o.Store, Registry: o.Runtime.Registry(), Executor: tool.NewExecutor(&tool.ExecutorOptions{StopGrace: time.Second}),
			Questions: o.Runtime.Questions(), Provider: scripted.New(s),
		})
	}
}

// TestRealRuntimeTurn runs prompt_send through the real turn loop: the
// model's bash call is denied by the gate with the fixed MCP authority (and
// never runs), memory_status runs, and progress follows the runtime's own
// events.
func TestRealRuntimeTurn(t *testing.T) {
	script := `{"turns": [
		{"text": "Let me check.", "tool_calls": [{"name": "bash", "arguments": {"command": "id"}}, {"name": "memory_status"}]},
		{"text": "All done here."}
	]}`
	session(t, withRuntime(t, script), func(t *testing.T, e *env, s *stepper) {
		frames := s.call(1, contracts.PromptSend, map[string]any{"prompt": "check things"}, "rt")
		var msgs []string
		for _, f := range frames[:len(frames)-1] {
			msgs = append(msgs, f["params"].(map[string]any)["message"].(string))
		}
		want := []string{
			"turn started", "assistant is writing (24 characters)", // "[scripted] Let me check."
			"tool bash started", "tool bash finished: denied",
			"tool memory_status started", "tool memory_status finished: ok",
			"assistant is writing (49 characters)", "turn finished",
		}
		if strings.Join(msgs, "|") != strings.Join(want, "|") {
			t.Errorf("progress =\n%q\nwant\n%q", msgs, want)
		}
		text, isErr := resultText(t, frames[len(frames)-1:])
		var res contracts.PromptSendResult
		if err := contracts.DecodePayload(text, &res); err != nil || isErr {
			t.Fatalf("prompt_send = %q (isError %v): %v", text, isErr, err)
		}
		if res.Failed || res.Text != scripted.Prefix+"All done here." {
			t.Errorf("result = %+v", res)
		}
		if n := e.tools["bash"].timesRun(); n != 0 {
			t.Errorf("bash ran %d times inside an MCP turn", n)
		}
		if n := e.tools["memory_status"].timesRun(); n != 1 {
			t.Errorf("memory_status ran %d times, want 1", n)
		}
	})
}

// TestRealRuntimeCancellation cancels a turn waiting on a slow model: the
// request gets the code-0 error, the user message stays, no assistant
// message is written later, and the session is free again.
func TestRealRuntimeCancellation(t *testing.T) {
	script := `{"turns": [{"text": "too late", "delay_ms": 600000}, {"text": "second answer"}]}`
	session(t, withRuntime(t, script), func(t *testing.T, e *env, s *stepper) {
		if got := s.call(1, contracts.PromptSend, map[string]any{"prompt": "take your time"}); len(got) != 0 {
			t.Fatalf("answered before the model did: %v", got)
		}
		s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		if code, msg := errorCode(t, s.frames()); code != 0 || msg != contracts.TextRequestCancelled {
			t.Errorf("cancelled prompt_send answered %v %q", code, msg)
		}
		text, _ := resultText(t, s.call(2, contracts.SessionGet, map[string]any{"session_id": firstSession}))
		var msgs []contracts.Message
		if err := contracts.DecodePayload(text, &msgs); err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 || msgs[0].Role != "user" {
			t.Errorf("session after cancellation = %+v, want only the user message", msgs)
		}
		if got := e.store.auditOf(sessions.AuditRequestCancelled); len(got) != 1 || got[0]["reason"] != conversation.ReasonRequestCancelled {
			t.Errorf("audit = %v", got)
		}
		text, isErr := resultText(t, s.call(3, contracts.PromptSend, map[string]any{"prompt": "now", "session_id": firstSession}))
		if isErr || !strings.Contains(text, "second answer") {
			t.Errorf("next prompt_send = %q (isError %v)", text, isErr)
		}
	})
}

// TestNoProgressAfterCancellation: once a prompt_send with a progress token
// is cancelled (by prompt_cancel or by the peer), nothing more about its
// turn reaches the client — no "turn finished: cancelled" — only the code-0
// error. Clients drop the token's handler when they cancel, so anything later
// would reach them as a notification for an unknown token.
func TestNoProgressAfterCancellation(t *testing.T) {
	script := `{"turns": [{"text": "slowly streamed words that never finish", "delay_ms": 600000}, {"text": "slow again", "delay_ms": 600000}]}`
	session(t, withRuntime(t, script), func(t *testing.T, e *env, s *stepper) {
		started := s.call(1, contracts.PromptSend, map[string]any{"prompt": "take your time"}, "tok")
		if len(started) != 1 || started[0]["method"] != "notifications/progress" {
			t.Fatalf("before the cancel: %v, want the one turn-started notification", started)
		}
		check := func(frames []map[string]any, cancelledID float64) {
			t.Helper()
			sawError := false
			for _, f := range frames {
				if f["method"] == "notifications/progress" {
					t.Errorf("progress after the cancel: %v", f["params"])
				}
				if id, ok := f["id"].(float64); ok && id == cancelledID {
					code, msg := errorCode(t, []map[string]any{f})
					sawError = code == 0 && msg == contracts.TextRequestCancelled
				}
			}
			if !sawError {
				t.Errorf("frames after the cancel = %v, want the code-0 error for request %v", frames, cancelledID)
			}
		}
		check(s.call(2, contracts.PromptCancel, map[string]any{"session_id": firstSession}), 1)

		started = s.call(3, contracts.PromptSend, map[string]any{"prompt": "again", "session_id": firstSession}, "tok2")
		if len(started) != 1 || started[0]["method"] != "notifications/progress" {
			t.Fatalf("before the peer's cancel: %v", started)
		}
		s.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
		check(s.frames(), 3)
	})
}
