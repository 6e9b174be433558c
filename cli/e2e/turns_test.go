//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/contracts"
)

// progressRecorder records the progress a client handler receives.
type progressRecorder struct {
	mu   sync.Mutex
	seen []e2etest.Progress
}

// on returns a progress option that records every notification and
// signals ch (without blocking) when a message starts with prefix.
func (r *progressRecorder) on(prefix string, ch chan<- struct{}) contracts.CallOption {
	return contracts.WithProgress(func(p float64, msg string) {
		r.mu.Lock()
		r.seen = append(r.seen, e2etest.Progress{Progress: p, Message: msg})
		r.mu.Unlock()
		if strings.HasPrefix(msg, prefix) {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})
}

func (r *progressRecorder) all() []e2etest.Progress {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// awaitSignal waits for ch, failing the test when done delivers first or
// nothing comes within testTimeout.
func awaitSignal(t *testing.T, what string, ch <-chan struct{}, done <-chan outcome) {
	t.Helper()
	select {
	case <-ch:
	case o := <-done:
		t.Fatalf("prompt_send ended before %s: %+v, %v", what, o.res, o.err)
	case <-time.After(e2etest.TestTimeout):
		t.Fatalf("no %s within %s", what, e2etest.TestTimeout)
	}
}

// awaitOutcome waits for an asynchronous prompt_send.
func awaitOutcome(t *testing.T, done <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-done:
		return o
	case <-time.After(e2etest.TestTimeout):
		t.Fatalf("prompt_send did not return within %s", e2etest.TestTimeout)
		return outcome{}
	}
}

// TestApprovalsNeverBlock: a turn whose model calls a tool an ask rule
// guards (approval) and a hard-constrained tool completes promptly: both
// are denied at once, the denials are in the tool messages, and neither
// tool ran.
func TestApprovalsNeverBlock(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, func(t *testing.T, backend string) {
		in := e2etest.NewInstall(t, backend)
		marker := filepath.Join(in.Root, "bash-ran")
		in.SetJSON("mcp_server.exposed_tools", []string{"memory_status"})
		in.SetJSON("tools.permission_rules", []map[string]string{{"tool": "memory_update", "action": "ask"}})
		in.Script(
			e2etest.Calls("let me try", e2etest.ToolCall("memory_update", map[string]any{"path": "notes/x", "content": "needs approval"}),
				e2etest.ToolCall("bash", map[string]any{"command": "touch " + marker})),
			e2etest.Say("all done"),
		)
		ctx := e2etest.Ctx(t)
		c := in.Serve(nil)
		var rec progressRecorder
		began := time.Now()
		res, err := c.Client.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "do the things"}, rec.on("", nil))
		if err != nil {
			t.Fatalf("prompt_send: %v", err)
		}
		// The question registry would wait 300s; the turn has nothing to wait for.
		if took := time.Since(began); took > 10*time.Second {
			t.Errorf("the turn took %s, want it not to wait for an approval", took)
		}
		if res.Failed || res.Text != "[scripted] all done" {
			t.Errorf("prompt_send = %+v, want the final answer after the denials", res)
		}
		branch, err := c.Client.SessionGet(ctx, res.SessionID)
		if err != nil {
			t.Fatalf("session_get: %v", err)
		}
		var roles []string
		for _, m := range branch {
			roles = append(roles, m.Role)
		}
		if want := []string{"user", "assistant", "tool", "tool", "assistant"}; !slices.Equal(roles, want) {
			t.Fatalf("session_get roles = %v, want %v", roles, want)
		}
		if !strings.Contains(branch[2].Content, "approval unavailable") {
			t.Errorf("memory_update tool message = %q, want the approval-unavailable denial", branch[2].Content)
		}
		if !strings.Contains(branch[3].Content, "hard constraint") {
			t.Errorf("bash tool message = %q, want the hard-constraint denial", branch[3].Content)
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("bash ran inside the MCP turn: %s exists (%v)", marker, err)
		}
		if n := e2etest.MemorySources(t, ctx, c.Client); n != 0 {
			t.Errorf("memory sources = %v after the denied memory_update, want 0", n)
		}
		// Progress is read on the wire: go-sdk may hand notifications to the
		// client's handler after the result, and contracts drops those.
		var msgs []string
		for _, p := range c.ProgressFor(c.LastCallTo(contracts.PromptSend)) {
			msgs = append(msgs, p.Message)
		}
		for _, want := range []string{"tool memory_update finished: denied", "tool bash finished: denied"} {
			if !slices.Contains(msgs, want) {
				t.Errorf("progress %q lacks %q", msgs, want)
			}
		}
		c.Close()
		var codes []string
		for _, r := range e2etest.AuditOf(in.Audit(), "mcp.tool.denied") {
			p := r.PayloadMap(t)
			if p["in_turn"] == true && r.SessionID == res.SessionID {
				codes = append(codes, p["reason_code"].(string))
			}
		}
		if want := []string{"APPROVAL_UNAVAILABLE_NON_INTERACTIVE", "HARD_CONSTRAINT_DENIED"}; !slices.Equal(codes, want) {
			t.Errorf("in-turn mcp.tool.denied reason codes = %v, want %v", codes, want)
		}
	})
}

// TestProgressOnlyWithToken: notifications/progress are sent only for
// requests with a progressToken, numbered 1, 2, 3, ... and written before
// the response; prompt_send reports the turn's events; a request without a
// token gets none (counted on the raw stdout).
func TestProgressOnlyWithToken(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, func(t *testing.T, backend string) {
		in := e2etest.NewInstall(t, backend)
		in.SetJSON("mcp_server.exposed_tools", []string{"memory_status"})
		in.Script(
			e2etest.Calls("looking", e2etest.ToolCall("memory_status", nil)), e2etest.Say("found it"),
			e2etest.Calls("looking again", e2etest.ToolCall("memory_status", nil)), e2etest.Say("found it again"),
		)
		ctx := e2etest.Ctx(t)
		c := in.Serve(nil)
		var rec progressRecorder
		resA, err := c.Client.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "with progress"}, rec.on("", nil))
		if err != nil {
			t.Fatalf("prompt_send with a progress token: %v", err)
		}
		reqA := c.LastCallTo(contracts.PromptSend)
		if _, err := c.Client.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "without progress", SessionID: resA.SessionID}); err != nil {
			t.Fatalf("prompt_send without a progress token: %v", err)
		}
		reqB := c.LastCallTo(contracts.PromptSend)
		var recTool progressRecorder
		if _, err := c.Client.ToolCall(ctx, "memory_status", nil, recTool.on("", nil)); err != nil {
			t.Fatalf("tool_call with a progress token: %v", err)
		}
		reqC := c.LastCallTo(contracts.ToolCall)
		if _, err := c.Client.ToolCall(ctx, "memory_status", nil); err != nil {
			t.Fatalf("tool_call without a progress token: %v", err)
		}
		reqD := c.LastCallTo(contracts.ToolCall)
		c.Close()

		tokA, tokC := reqA.ProgressToken(), reqC.ProgressToken()
		if tokA == "" || tokC == "" || reqB.ProgressToken() != "" || reqD.ProgressToken() != "" {
			t.Fatalf("progress tokens sent: A %q B %q C %q D %q, want A and C only", tokA, reqB.ProgressToken(), tokC, reqD.ProgressToken())
		}
		out := c.Out.Frames()
		byToken := map[string][]e2etest.Progress{}
		for _, p := range e2etest.ProgressOf(out) {
			byToken[p.Token] = append(byToken[p.Token], p)
		}
		for tok, ps := range byToken {
			if tok != tokA && tok != tokC {
				t.Errorf("%d progress notifications with token %s, which no request carried", len(ps), tok)
			}
		}
		check := func(name string, req e2etest.Frame, ps []e2etest.Progress) {
			t.Helper()
			resp, ok := e2etest.ResponseTo(out, req.ID())
			if !ok {
				t.Fatalf("%s: no response", name)
			}
			for i, p := range ps {
				if p.Progress != float64(i+1) {
					t.Errorf("%s: progress #%d = %v, want %d (1, 2, 3, ...)", name, i, p.Progress, i+1)
				}
				if p.Index > resp.Index {
					t.Errorf("%s: progress %q written after the response", name, p.Message)
				}
			}
		}
		psA := byToken[tokA]
		check("prompt_send", reqA, psA)
		check("tool_call", reqC, byToken[tokC])
		var msgs []string
		for _, p := range psA {
			msgs = append(msgs, p.Message)
		}
		if len(msgs) < 4 || msgs[0] != "turn started" || msgs[len(msgs)-1] != "turn finished" ||
			!slices.Contains(msgs, "tool memory_status started") || !slices.Contains(msgs, "tool memory_status finished: ok") {
			t.Errorf("prompt_send progress = %q, want turn started, the tool's start and finish, turn finished", msgs)
		}
		for _, m := range msgs {
			if strings.Contains(m, "with progress") || strings.Contains(m, "found it") {
				t.Errorf("progress %q carries prompt or reply text", m)
			}
		}
		// The client's handler sees the wire's notifications in order (go-sdk
		// may deliver the last ones after the result, which contracts drops).
		var client []string
		for _, p := range rec.all() {
			client = append(client, p.Message)
		}
		if len(client) > len(msgs) || !slices.Equal(client, msgs[:len(client)]) {
			t.Errorf("progress the client handler saw = %q, want a prefix of the wire's %q", client, msgs)
		}
		// No runtime tool an MCP client may call reports updates (only bash
		// does, and bash is always denied), so tool_call sends none here.
		if n := len(byToken[tokC]) + len(recTool.all()); n != 0 {
			t.Errorf("tool_call memory_status got %d progress notifications, want 0", n)
		}
	})
}

// TestCancelInFlightPromptSend: cancelling the client's context of a
// running prompt_send (notifications/cancelled) gets the JSON-RPC error
// {code 0, "Request cancelled"} on the wire, never a result; the session is
// free again, the cancelled turn wrote no assistant message, and the audit
// holds mcp.request.cancelled with reason request_cancelled.
func TestCancelInFlightPromptSend(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, func(t *testing.T, backend string) {
		in := e2etest.NewInstall(t, backend)
		in.Script(e2etest.Say("ready"), e2etest.Slowly(200, 50*time.Millisecond), e2etest.Say("after the cancel"))
		ctx := e2etest.Ctx(t)
		c := in.Serve(nil)
		first, err := c.Client.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "start"})
		if err != nil {
			t.Fatalf("prompt_send: %v", err)
		}
		sid := first.SessionID

		writing := make(chan struct{}, 1)
		var rec progressRecorder
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := promptAsync(cctx, c, contracts.PromptSendArgs{Prompt: "tell me a very long story", SessionID: sid},
			rec.on("assistant is writing", writing))
		awaitSignal(t, "the model writing", writing, done)
		req := c.LastCallTo(contracts.PromptSend)
		cancel()
		if o := awaitOutcome(t, done); !errors.Is(o.err, context.Canceled) {
			t.Errorf("cancelled prompt_send = %+v, %v; want context.Canceled", o.res, o.err)
		}
		c.Sent.WaitFor(t, "notifications/cancelled", e2etest.TestTimeout, func(fs []e2etest.Frame) bool {
			for _, f := range fs {
				var id json.RawMessage
				if f.Method() == "notifications/cancelled" && f.Param("requestId", &id) && string(id) == req.ID() {
					return true
				}
			}
			return false
		})
		resp := c.WaitResponse(req.ID())
		if _, hasResult := resp.Members["result"]; hasResult {
			t.Errorf("the cancelled request got a result: %s", resp.Raw)
		}
		var wireErr map[string]any
		if err := json.Unmarshal(e2etest.ErrorObject(t, resp), &wireErr); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]any{"code": 0.0, "message": "Request cancelled"}, wireErr); diff != "" {
			t.Errorf("error of the cancelled request (-want +got):\n%s", diff)
		}
		n := 0
		for _, f := range c.Out.Frames() {
			if f.IsResponse() && f.ID() == req.ID() {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d responses to the cancelled request, want 1", n)
		}

		branch, err := c.Client.SessionGet(ctx, sid)
		if err != nil {
			t.Fatalf("session_get: %v", err)
		}
		if got := rolesOf(branch); !slices.Equal(got, []string{"user", "assistant", "user"}) ||
			branch[len(branch)-1].Content != "tell me a very long story" {
			t.Errorf("session after the cancel = %v, want the cancelled user message last and no assistant reply", branch)
		}
		next, err := c.Client.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "are you there?", SessionID: sid})
		if err != nil || next.Failed || next.Text != "[scripted] after the cancel" {
			t.Fatalf("prompt_send after the cancel = %+v, %v; want the session free and the next answer", next, err)
		}
		branch, err = c.Client.SessionGet(ctx, sid)
		if err != nil {
			t.Fatalf("session_get: %v", err)
		}
		if got := rolesOf(branch); !slices.Equal(got, []string{"user", "assistant", "user", "user", "assistant"}) {
			t.Errorf("roles after the next turn = %v, want no assistant message from the cancelled turn", got)
		}
		c.Close()

		out := in.MustRun("audit", "tail", "--json", "-n", "10000")
		for _, secret := range []string{"tell me a very long story", "are you there?", in.Token} {
			if strings.Contains(out, secret) {
				t.Errorf("the audit log contains %q", secret)
			}
		}
		recs := in.Audit()
		cancelled := e2etest.AuditOf(recs, "mcp.request.cancelled")
		if len(cancelled) != 1 {
			t.Fatalf("mcp.request.cancelled records = %+v, want 1", cancelled)
		}
		want := map[string]any{"request_id": json.Number(req.ID()), "session_id": sid, "client_id": in.ClientID, "reason": "request_cancelled"}
		if diff := cmp.Diff(want, cancelled[0].PayloadMap(t)); diff != "" {
			t.Errorf("mcp.request.cancelled payload (-want +got):\n%s", diff)
		}
		if cancelled[0].SessionID != sid || cancelled[0].Origin != "mcp/"+in.ClientID {
			t.Errorf("mcp.request.cancelled session %q origin %q, want %s and mcp/%s", cancelled[0].SessionID, cancelled[0].Origin, sid, in.ClientID)
		}
		for _, r := range e2etest.AuditOf(recs, "mcp.prompt.completed") {
			if r.PayloadMap(t)["request_id"] == json.Number(req.ID()) {
				t.Errorf("the cancelled request also has mcp.prompt.completed: %s", r.Payload)
			}
		}
		if n := len(e2etest.AuditOf(recs, "mcp.prompt.completed")); n != 2 {
			t.Errorf("%d mcp.prompt.completed records, want 2 (the turns before and after)", n)
		}
		in.VerifyAudit()
	})
}

func rolesOf(msgs []contracts.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.Role)
	}
	return out
}

// TestPromptCancelOwnership: two `mcp serve` processes share one store.
// prompt_cancel from the other connection returns cancelled:false and the
// turn runs to its end; the other connection's prompt_send on the busy
// session fails with "prompt execution failed" and a reason; prompt_cancel
// of a finished or unknown session is cancelled:false; of its own running
// turn cancelled:true, and that prompt_send gets the code-0 error.
func TestPromptCancelOwnership(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, func(t *testing.T, backend string) {
		in := e2etest.NewInstall(t, backend)
		in.Script(e2etest.Say("ready"), e2etest.Slowly(40, 150*time.Millisecond), e2etest.Slowly(200, 50*time.Millisecond))
		ctx := e2etest.Ctx(t)
		a := in.Serve(&e2etest.ConnOptions{ClientName: "A", ClientVersion: "1", ProtocolVersion: contracts.ProtocolVersion})
		b := in.Serve(&e2etest.ConnOptions{ClientName: "B", ClientVersion: "1", ProtocolVersion: contracts.ProtocolVersion})
		first, err := a.Client.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "start"})
		if err != nil {
			t.Fatalf("prompt_send: %v", err)
		}
		sid := first.SessionID

		started := make(chan struct{}, 1)
		var rec progressRecorder
		doneA := promptAsync(ctx, a, contracts.PromptSendArgs{Prompt: "a slow one", SessionID: sid}, rec.on("turn started", started))
		awaitSignal(t, "A's turn starting", started, doneA)

		pc, err := b.Client.PromptCancel(ctx, sid)
		if err != nil || pc != (contracts.PromptCancelResult{SessionID: sid, Cancelled: false}) {
			t.Errorf("prompt_cancel from another connection = %+v, %v; want cancelled:false", pc, err)
		}
		_, err = b.Client.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "me too", SessionID: sid})
		var te *contracts.ToolError
		if !errors.As(err, &te) || te.Payload == nil || te.Payload.Error != contracts.TextPromptExecutionFailed || te.Payload.Reason == "" {
			t.Errorf("prompt_send on a session busy in another process = %v, want isError {\"error\":%q,\"reason\":...}", err, contracts.TextPromptExecutionFailed)
		}
		select {
		case o := <-doneA:
			t.Fatalf("A's turn ended before B's calls were checked (%+v, %v): lengthen the slow turn", o.res, o.err)
		default:
		}
		o := awaitOutcome(t, doneA)
		if o.err != nil || o.res.Failed || !strings.HasSuffix(o.res.Text, " w39") {
			t.Errorf("A's turn after B's prompt_cancel = %+v, %v; want it to run to its end", o.res, o.err)
		}

		for _, id := range []string{sid, "mcp_ffffffffffffffffffffffffffffffff"} {
			pc, err := a.Client.PromptCancel(ctx, id)
			if err != nil || pc != (contracts.PromptCancelResult{SessionID: id, Cancelled: false}) {
				t.Errorf("prompt_cancel(%s) with nothing running = %+v, %v; want cancelled:false", id, pc, err)
			}
		}

		doneOwn := promptAsync(ctx, a, contracts.PromptSendArgs{Prompt: "cancel me", SessionID: sid}, rec.on("turn started", started))
		awaitSignal(t, "A's second turn starting", started, doneOwn)
		reqOwn := a.LastCallTo(contracts.PromptSend)
		pc, err = a.Client.PromptCancel(ctx, sid)
		if err != nil || pc != (contracts.PromptCancelResult{SessionID: sid, Cancelled: true}) {
			t.Errorf("prompt_cancel of its own running turn = %+v, %v; want cancelled:true", pc, err)
		}
		o = awaitOutcome(t, doneOwn)
		var pe *contracts.ProtocolError
		if !errors.As(o.err, &pe) || pe.Code != 0 || pe.Message != contracts.TextRequestCancelled {
			t.Errorf("the prompt_send prompt_cancel stopped = %+v, %v; want JSON-RPC error 0 %q", o.res, o.err, contracts.TextRequestCancelled)
		}
		if pc, err := a.Client.PromptCancel(ctx, sid); err != nil || pc.Cancelled {
			t.Errorf("second prompt_cancel = %+v, %v; want cancelled:false", pc, err)
		}
		if list, err := b.Client.SessionsList(ctx); err != nil || len(list) != 1 {
			t.Errorf("sessions_list = %v, %v; want the one session (no orphan from the refused prompt_send)", list, err)
		}
		a.Close()
		b.Close()

		cancelled := e2etest.AuditOf(in.Audit(), "mcp.request.cancelled")
		if len(cancelled) != 1 {
			t.Fatalf("mcp.request.cancelled records = %+v, want 1", cancelled)
		}
		want := map[string]any{"request_id": json.Number(reqOwn.ID()), "session_id": sid, "client_id": in.ClientID, "reason": "prompt_cancel"}
		if diff := cmp.Diff(want, cancelled[0].PayloadMap(t)); diff != "" {
			t.Errorf("mcp.request.cancelled payload (-want +got):\n%s", diff)
		}
		in.VerifyAudit()
	})
}
