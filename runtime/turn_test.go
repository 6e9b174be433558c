package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

func TestPlainReply(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	observe, drain := collect()
	p := script(t, `{"turns":[{"text":"Hello there."}]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p, SystemPrompt: "Be kind."})

	res, err := rt.ProcessUserTurn(t.Context(), observed(mcpRequest(t, "s1", "hi <there> & you"), observe))
	if err != nil {
		t.Fatalf("ProcessUserTurn: %v", err)
	}
	if res.Text != "[scripted] Hello there." || res.Failed || res.ErrorClass != "" || res.UserMessageID == "" || res.AssistantMessageID == "" {
		t.Errorf("ProcessUserTurn = %+v", res)
	}
	auth := client(t, authz.Scope{}).Authority()
	want := []stored{
		{Role: "user", Content: "hi <there> & you", Meta: runtime.Metadata{Authority: &auth, Source: "mcp", AgentID: "main"}},
		{Role: "assistant", Content: "[scripted] Hello there.", Meta: runtime.Metadata{Provider: "scripted", StopReason: provider.StopEnd}},
	}
	if diff := cmp.Diff(want, branch(t, store, "s1")); diff != "" {
		t.Errorf("stored branch (-want +got):\n%s", diff)
	}
	sess, err := store.GetSession(t.Context(), "s1")
	if err != nil || sess.HeadID != res.AssistantMessageID {
		t.Errorf("session head = %q, %v; want the assistant message %q", sess.HeadID, err, res.AssistantMessageID)
	}

	// The model saw the system prompt with the speaker note, and the
	// client's text inside the speaker envelope.
	req := p.Requests()[0]
	if !strings.HasPrefix(req.System, "Be kind.") || !strings.Contains(req.System, runtime.SpeakerNote) {
		t.Errorf("system prompt = %q", req.System)
	}
	wantMsgs := []provider.Message{{Role: provider.RoleUser,
		Content: `{"speaker_kind":"client","speaker_id":"mcp/fedcba9876543210","speaker_display":"MCP client","content":"hi <there> & you"}`}}
	if diff := cmp.Diff(wantMsgs, req.Messages); diff != "" {
		t.Errorf("model messages (-want +got):\n%s", diff)
	}

	evs := drain()
	for _, e := range evs {
		if e.SessionID != "s1" || requestID(e) != "req-1" {
			t.Errorf("event %s: session %q, request_id %v", e.Type, e.SessionID, requestID(e))
		}
	}
	if diff := cmp.Diff([]string{events.TurnStart, events.TextProgress, events.TurnEnd}, typesOf(evs)); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
}

func TestOwnerSeesNoEnvelope(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	p := script(t, `{"turns":[{"text":"one"},{"text":"two"}]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p})
	if _, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "from the client")); err != nil {
		t.Fatal(err)
	}
	owner := runtime.TurnRequest{SessionID: "s1", Text: "from the owner", Speaker: owner(t, authz.Scope{})}
	if _, err := rt.ProcessUserTurn(t.Context(), owner); err != nil {
		t.Fatal(err)
	}
	want := []provider.Message{
		{Role: provider.RoleUser, Content: `{"speaker_kind":"client","speaker_id":"mcp/fedcba9876543210","speaker_display":"MCP client","content":"from the client"}`},
		{Role: provider.RoleAssistant, Content: "[scripted] one"},
		{Role: provider.RoleUser, Content: "from the owner"},
	}
	if diff := cmp.Diff(want, p.Requests()[1].Messages); diff != "" {
		t.Errorf("second turn's model messages (-want +got):\n%s", diff)
	}
}

func TestToolCallSucceeds(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	observe, drain := collect()
	rec := &recorder{}
	p := script(t, `{"turns":[
		{"text":"Searching.","tool_calls":[{"id":"c1","name":"memory_search","arguments":{"query":"secret-arg"}}]},
		{"text":"Found it."}
	]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p,
		Registry: registry(t, rec.tool("memory_search", authz.CapMemoryRead, nil), rec.tool("bash", authz.CapProcessExec, nil))})

	res, err := rt.ProcessUserTurn(t.Context(), observed(mcpRequest(t, "s1", "find it"), observe))
	if err != nil {
		t.Fatalf("ProcessUserTurn: %v", err)
	}
	if res.Text != "[scripted] Found it." || res.Failed {
		t.Errorf("ProcessUserTurn = %+v", res)
	}
	if diff := cmp.Diff([]string{`{"query":"secret-arg"}`}, rec.Calls()); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	got := branch(t, store, "s1")
	want := []stored{
		{Role: "user", Content: "find it"},
		{Role: "assistant", Content: "[scripted] Searching.", Meta: runtime.Metadata{Provider: "scripted",
			ToolCalls: []runtime.ToolCallData{{ID: "c1", Name: "memory_search", Arguments: json.RawMessage(`{"query":"secret-arg"}`)}}}},
		{Role: "tool", Content: "result of memory_search", Meta: runtime.Metadata{ToolCallID: "c1", ToolName: "memory_search"}},
		{Role: "assistant", Content: "[scripted] Found it.", Meta: runtime.Metadata{Provider: "scripted", StopReason: provider.StopEnd}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(runtime.Metadata{}, "Authority", "Source", "AgentID")); diff != "" {
		t.Errorf("stored branch (-want +got):\n%s", diff)
	}

	// Only the tools the paired tier holds are offered.
	reqs := p.Requests()
	var offered []string
	for _, s := range reqs[0].Tools {
		offered = append(offered, s.Name)
	}
	if diff := cmp.Diff([]string{"memory_search"}, offered); diff != "" {
		t.Errorf("offered tools (-want +got):\n%s", diff)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1]
	if diff := cmp.Diff(provider.Message{Role: provider.RoleTool, Content: "result of memory_search", ToolCallID: "c1", ToolName: "memory_search"}, last); diff != "" {
		t.Errorf("tool result the model saw (-want +got):\n%s", diff)
	}

	evs := drain()
	for _, e := range evs {
		if s := fmt.Sprintf("%+v", e.Data); strings.Contains(s, "find it") || strings.Contains(s, "secret-arg") {
			t.Errorf("event %s = %s carries user text or tool arguments", e.Type, s)
		}
		if d, ok := e.Data.(events.ToolEndData); ok && d != (events.ToolEndData{RequestID: "req-1", CallID: "c1", Tool: "memory_search"}) {
			t.Errorf("tool.end data = %+v", d)
		}
	}
	wantTypes := []string{events.TurnStart, events.TextProgress, events.ToolStart, events.ToolEnd, events.TextProgress, events.TurnEnd}
	if diff := cmp.Diff(wantTypes, typesOf(evs)); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
}

func TestGateDeniesForMCP(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	rec := &recorder{}
	observe, drain := collect()
	p := script(t, `{"turns":[
		{"tool_calls":[{"id":"c1","name":"bash","arguments":{"query":"rm -rf /"}},{"id":"c2","name":"read","arguments":{"query":"/etc/passwd"}},{"id":"c3","name":"nope"}]},
		{"text":"I may not."}
	]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p,
		Registry: registry(t, rec.tool("bash", authz.CapProcessExec, nil), rec.tool("read", authz.CapFSRead, nil))})

	res, err := rt.ProcessUserTurn(t.Context(), observed(mcpRequest(t, "s1", "clean up"), observe))
	if err != nil || res.Failed {
		t.Fatalf("ProcessUserTurn = %+v, %v", res, err)
	}
	if calls := rec.Calls(); len(calls) != 0 {
		t.Errorf("denied tools ran: %v", calls)
	}
	got := branch(t, store, "s1")
	tools := []stored{got[2], got[3], got[4]}
	want := []stored{
		{Role: "tool", Meta: runtime.Metadata{ToolCallID: "c1", ToolName: "bash", IsError: true, Denied: true, ReasonCode: authz.ReasonHardConstraint}},
		{Role: "tool", Meta: runtime.Metadata{ToolCallID: "c2", ToolName: "read", IsError: true, Denied: true, ReasonCode: authz.ReasonCapability}},
		{Role: "tool", Meta: runtime.Metadata{ToolCallID: "c3", ToolName: "nope", IsError: true, ReasonCode: "UNKNOWN_TOOL"}},
	}
	if diff := cmp.Diff(want, tools, cmpopts.IgnoreFields(stored{}, "Content")); diff != "" {
		t.Errorf("tool messages (-want +got):\n%s", diff)
	}
	var ends []events.ToolEndData
	for _, e := range drain() {
		if d, ok := e.Data.(events.ToolEndData); ok {
			ends = append(ends, d)
		}
	}
	wantEnds := []events.ToolEndData{
		{RequestID: "req-1", CallID: "c1", Tool: "bash", IsError: true, Denied: true, ReasonCode: authz.ReasonHardConstraint, Capability: string(authz.CapProcessExec)},
		{RequestID: "req-1", CallID: "c2", Tool: "read", IsError: true, Denied: true, ReasonCode: authz.ReasonCapability, Capability: string(authz.CapFSRead)},
		{RequestID: "req-1", CallID: "c3", Tool: "nope", IsError: true},
	}
	if diff := cmp.Diff(wantEnds, ends); diff != "" {
		t.Errorf("tool.end events (-want +got):\n%s", diff)
	}
	// The model saw the denial texts as the tool results.
	seen := p.Requests()[1].Messages
	for i, m := range seen[len(seen)-3:] {
		if m.Role != provider.RoleTool || !m.IsError || m.Content != tools[i].Content || m.Content == "" {
			t.Errorf("model saw tool result %d = %+v, want the stored denial %q", i, m, tools[i].Content)
		}
	}
	if !strings.Contains(tools[0].Content, "not allowed for source mcp") || !strings.Contains(tools[1].Content, "fs.read") {
		t.Errorf("denial texts = %q, %q", tools[0].Content, tools[1].Content)
	}
}

func TestNoProviderConfigured(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	rt := runtime.New(runtime.Options{Store: store})
	res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "hello?"))
	if err != nil {
		t.Fatalf("ProcessUserTurn: %v", err)
	}
	if !res.Failed || res.ErrorClass != runtime.ErrorClassNotConfigured || !strings.Contains(res.Text, "openprogram config set model.provider openai") ||
		!strings.Contains(res.Text, "model.name") {
		t.Errorf("ProcessUserTurn = %+v, want a failure saying which keys to set", res)
	}
	got := branch(t, store, "s1")
	if len(got) != 2 || !got[1].Meta.Failed || got[1].Content != res.Text || got[1].Meta.ErrorClass != runtime.ErrorClassNotConfigured {
		t.Errorf("stored branch = %+v", got)
	}
}

func TestProviderErrorFailsTurn(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	p := script(t, `{"turns":[{"error":{"class":"auth","message":"bad key"}},{"text":"back"}]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p})
	res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "one"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.ErrorClass != string(provider.ClassAuth) || !strings.Contains(res.Text, "bad key") {
		t.Errorf("ProcessUserTurn = %+v", res)
	}
	// The failure notice is not shown to the model later.
	if _, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "two")); err != nil {
		t.Fatal(err)
	}
	for _, m := range p.Requests()[1].Messages {
		if m.Role != provider.RoleUser {
			t.Errorf("second turn showed the model %+v, want only the two user messages", m)
		}
	}
}

func TestMaxSteps(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	rec := &recorder{}
	loop := `{"tool_calls":[{"name":"memory_search","arguments":{"query":"again"}}]}`
	p := script(t, `{"turns":[`+strings.Repeat(loop+",", 9)+loop+`]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p, MaxSteps: 3,
		Registry: registry(t, rec.tool("memory_search", authz.CapMemoryRead, nil))})
	res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "loop"))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Failed || res.ErrorClass != runtime.ErrorClassMaxSteps {
		t.Errorf("ProcessUserTurn = %+v, want failed with max_steps", res)
	}
	if n := len(p.Requests()); n != 3 {
		t.Errorf("model called %d times, want 3", n)
	}
	if n := len(rec.Calls()); n != 2 {
		t.Errorf("tool ran %d times, want 2 (the last step's call is not run)", n)
	}
	got := branch(t, store, "s1")
	var roles []string
	for _, m := range got {
		roles = append(roles, m.Role)
	}
	if diff := cmp.Diff([]string{"user", "assistant", "tool", "assistant", "tool", "assistant", "tool", "assistant"}, roles); diff != "" {
		t.Errorf("stored roles (-want +got):\n%s", diff)
	}
	if m := got[6]; !m.Meta.IsError || m.Meta.ReasonCode != "STEP_LIMIT" {
		t.Errorf("last tool message = %+v, want a not-run step limit result", m)
	}
	if m := got[7]; !m.Meta.Failed || m.Content != res.Text {
		t.Errorf("final message = %+v", m)
	}
}

func TestTextProgressEveryFragment(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	observe, drain := collect()
	text := strings.Repeat("word ", 90) // 450 characters
	p := script(t, `{"turns":[{"text":"`+text+`"}]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p})
	res, err := rt.ProcessUserTurn(t.Context(), observed(mcpRequest(t, "s1", "talk"), observe))
	if err != nil {
		t.Fatal(err)
	}
	var chunks []string
	var totals []int
	for _, e := range drain() {
		if d, ok := e.Data.(events.TextData); ok {
			chunks = append(chunks, d.Text)
			totals = append(totals, d.Chars)
		}
	}
	if strings.Join(chunks, "") != res.Text {
		t.Errorf("progress chunks join to %q, want the reply", strings.Join(chunks, ""))
	}
	// "[scripted] " + 450 characters, delivered word by word: one event a
	// fragment (consumers coalesce), each with the running total.
	if len(totals) < 2 || totals[len(totals)-1] != 461 || !slices.IsSorted(totals) {
		t.Errorf("progress totals = %v, want rising to 461", totals)
	}
}

func TestInvalidRequests(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	rt := runtime.New(runtime.Options{Store: store, Provider: script(t, `{"turns":[]}`)})
	good := mcpRequest(t, "s1", "hi")
	// A speaker authz did not make (the zero value: its fields cannot be
	// set by hand) is refused; every field of a made one was checked by
	// its constructor (authz's tests), and the turn checks none again.
	tests := map[string]func(r *runtime.TurnRequest){
		"no session": func(r *runtime.TurnRequest) { r.SessionID = "" },
		"no text":    func(r *runtime.TurnRequest) { r.Text = "" },
		"no speaker": func(r *runtime.TurnRequest) { r.Speaker = authz.Speaker{} },
	}
	for name, mutate := range tests {
		req := good
		mutate(&req)
		if _, err := rt.ProcessUserTurn(t.Context(), req); !errors.Is(err, runtime.ErrInvalidTurn) {
			t.Errorf("%s: ProcessUserTurn error = %v, want ErrInvalidTurn", name, err)
		}
	}
	if got := branch(t, store, "s1"); len(got) != 0 {
		t.Errorf("invalid requests wrote %+v", got)
	}
}

func TestUnknownSession(t *testing.T) {
	store := openStore(t, "")
	rt := runtime.New(runtime.Options{Store: store, Provider: script(t, `{"turns":[]}`)})
	_, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "missing", "hi"))
	if !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("ProcessUserTurn on a missing session = %v, want ErrNotFound", err)
	}
}

// checkReleased fails unless another owner can take the session's lease.
func checkReleased(t *testing.T, store sessions.Store, sid string) {
	t.Helper()
	if err := store.AcquireTurn(context.Background(), sid, "checker", time.Minute); err != nil {
		t.Errorf("lease not released: %v", err)
		return
	}
	if err := store.ReleaseTurn(context.Background(), sid, "checker"); err != nil {
		t.Error(err)
	}
}

func userOnly(t *testing.T, store sessions.Store, sid, text string) {
	t.Helper()
	got := branch(t, store, sid)
	if len(got) != 1 || got[0].Role != "user" || got[0].Content != text {
		t.Errorf("stored branch = %+v, want only the user message", got)
	}
}

func TestCancelWhileModelStreams(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	p := script(t, `{"turns":[{"text":"a slow answer that never really ends at all","delay_ms":50}]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	streaming := func(e events.Event) {
		if e.Type == events.TextProgress {
			once.Do(cancel) // the model is streaming
		}
	}
	res, err := rt.ProcessUserTurn(ctx, observed(mcpRequest(t, "s1", "talk slowly"), streaming))
	if !errors.Is(err, context.Canceled) || res != (runtime.TurnResult{}) {
		t.Fatalf("ProcessUserTurn = %+v, %v; want zero and context.Canceled", res, err)
	}
	userOnly(t, store, "s1", "talk slowly")
	checkReleased(t, store, "s1")
}

func TestCancelWhileToolRuns(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	qs := questions.New(nil)
	pending, err := qs.Register(questions.Question{SessionID: "s1", Kind: questions.KindConfirm, Prompt: "continue?"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := qs.Register(questions.Question{SessionID: "s2", Kind: questions.KindConfirm, Prompt: "other session"})
	if err != nil {
		t.Fatal(err)
	}
	defer qs.Resolve(other.ID(), questions.Answer{Status: questions.StatusDeclined})
	started := make(chan struct{})
	sawCancel := make(chan struct{})
	rec := &recorder{}
	slow := rec.tool("memory_search", authz.CapMemoryRead, func(ctx context.Context) (tool.Result, error) {
		close(started)
		<-ctx.Done()
		close(sawCancel)
		return tool.TextResult("too late"), nil
	})
	p := script(t, `{"turns":[{"tool_calls":[{"name":"memory_search"}]},{"text":"never asked"}]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p, Questions: qs, Registry: registry(t, slow)})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-started
		cancel()
	}()
	_, err = rt.ProcessUserTurn(ctx, mcpRequest(t, "s1", "search"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ProcessUserTurn error = %v, want context.Canceled", err)
	}
	select {
	case <-sawCancel:
	default:
		t.Error("the running tool was not cancelled")
	}
	if n := len(p.Requests()); n != 1 {
		t.Errorf("model called %d times, want 1 (none after the cancel)", n)
	}
	userOnly(t, store, "s1", "search")
	checkReleased(t, store, "s1")
	select {
	case <-pending.Done():
		if a := pending.Wait(t.Context()); a.Status != questions.StatusDeclined {
			t.Errorf("pending question resolved %q, want declined", a.Status)
		}
	default:
		t.Error("the session's pending question is still open")
	}
	select {
	case <-other.Done():
		t.Error("another session's question was resolved")
	default:
	}
}

func TestCancelBetweenSteps(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rec := &recorder{}
	cancelling := rec.tool("memory_search", authz.CapMemoryRead, func(context.Context) (tool.Result, error) {
		cancel() // the cancel arrives as the tool finishes, before the next model call
		return tool.TextResult("done"), nil
	})
	p := script(t, `{"turns":[{"tool_calls":[{"name":"memory_search"},{"name":"memory_search"}]},{"text":"never asked"}]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p, Registry: registry(t, cancelling)})
	_, err := rt.ProcessUserTurn(ctx, mcpRequest(t, "s1", "search"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ProcessUserTurn error = %v, want context.Canceled", err)
	}
	if n := len(p.Requests()); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
	if n := len(rec.Calls()); n != 1 {
		t.Errorf("tool ran %d times, want 1 (no tool after the cancel)", n)
	}
	userOnly(t, store, "s1", "search")
	checkReleased(t, store, "s1")
}

func TestLateModelAnswerDiscarded(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	g := newGated(provider.Response{Text: "late answer", StopReason: provider.StopEnd})
	g.ignoreCtx = true
	rt := runtime.New(runtime.Options{Store: store, Provider: g})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-g.entered
		cancel()
		close(g.release)
	}()
	if _, err := rt.ProcessUserTurn(ctx, mcpRequest(t, "s1", "hi")); !errors.Is(err, context.Canceled) {
		t.Fatalf("ProcessUserTurn error = %v, want context.Canceled", err)
	}
	userOnly(t, store, "s1", "hi")
}

func TestBusyAcrossStoreHandles(t *testing.T) {
	dir := t.TempDir()
	storeA, storeB := openStore(t, dir), openStore(t, dir)
	createSession(t, storeA, "s1")
	gA := newGated(provider.Response{Text: "from A", StopReason: provider.StopEnd})
	gB := newGated(provider.Response{Text: "from B", StopReason: provider.StopEnd})
	rts := []*runtime.Runtime{
		runtime.New(runtime.Options{Store: storeA, Provider: gA}),
		runtime.New(runtime.Options{Store: storeB, Provider: gB}),
	}
	type outcome struct {
		res runtime.TurnResult
		err error
	}
	out := make([]outcome, 2)
	ended := []chan struct{}{make(chan struct{}), make(chan struct{})}
	start := make(chan struct{})
	for i, rt := range rts {
		go func() {
			defer close(ended[i])
			<-start
			res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", []string{"A", "B"}[i]))
			out[i] = outcome{res, err}
		}()
	}
	close(start)
	// Exactly one turn reaches its model. It holds the lease until its gate
	// opens, so the other turn must have tried the lease and ended before
	// the winner is released: only then is the outcome decided.
	loser := 1
	select {
	case <-gA.entered:
	case <-gB.entered:
		loser = 0
	}
	<-ended[loser]
	close(gA.release)
	close(gB.release)
	<-ended[1-loser]

	var busy, done int
	for _, o := range out {
		switch {
		case errors.Is(o.err, sessions.ErrBusy):
			busy++
		case o.err == nil && !o.res.Failed:
			done++
		default:
			t.Errorf("turn ended with %+v, %v", o.res, o.err)
		}
	}
	if busy != 1 || done != 1 {
		t.Fatalf("busy, done = %d, %d; want 1, 1", busy, done)
	}
	got := branch(t, storeA, "s1")
	if len(got) != 2 || got[1].Content != "from "+got[0].Content {
		t.Errorf("stored branch = %+v, want only the winner's user and assistant messages", got)
	}
}

// lossyStore loses every lease it renews once lost is set.
type lossyStore struct {
	sessions.Store
	lost atomic.Bool
}

func (s *lossyStore) RenewTurn(ctx context.Context, sid, owner string, ttl time.Duration) error {
	if s.lost.Load() {
		return fmt.Errorf("renew: %w", sessions.ErrLeaseLost)
	}
	return s.Store.RenewTurn(ctx, sid, owner, ttl)
}

func TestLeaseLostStopsTurn(t *testing.T) {
	store := &lossyStore{Store: openStore(t, "")}
	createSession(t, store, "s1")
	g := newGated(provider.Response{Text: "never stored", StopReason: provider.StopEnd})
	rt := runtime.New(runtime.Options{Store: store, Provider: g, LeaseTTL: 30 * time.Millisecond})
	go func() {
		<-g.entered
		store.lost.Store(true)
	}()
	res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "hi"))
	if !errors.Is(err, sessions.ErrLeaseLost) || res != (runtime.TurnResult{}) {
		t.Fatalf("ProcessUserTurn = %+v, %v; want zero and ErrLeaseLost", res, err)
	}
	userOnly(t, store, "s1", "hi")
}

type panicky struct{}

func (panicky) Name() string { return "panicky" }
func (panicky) Stream(context.Context, provider.Request, func(provider.Delta)) (provider.Response, error) {
	panic("provider bug")
}

func TestProviderPanicReleasesLease(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	rt := runtime.New(runtime.Options{Store: store, Provider: panicky{}})
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the provider's panic did not propagate")
			}
		}()
		_, _ = rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "hi"))
	}()
	checkReleased(t, store, "s1")
}

// losingProvider loses the turn lease while the model answers.
type losingProvider struct{ store *lossyStore }

func (losingProvider) Name() string { return "losing" }
func (p losingProvider) Stream(context.Context, provider.Request, func(provider.Delta)) (provider.Response, error) {
	p.store.lost.Store(true)
	return provider.Response{Text: "never stored", StopReason: provider.StopEnd}, nil
}

// TestLostLeaseCheckedBeforeTheReply: the renewer ticks only every third
// of the TTL, so the final write itself must prove the lease is still held;
// a turn that lost it writes nothing (another turn may own the session).
func TestLostLeaseCheckedBeforeTheReply(t *testing.T) {
	store := &lossyStore{Store: openStore(t, "")}
	createSession(t, store, "s1")
	rt := runtime.New(runtime.Options{Store: store, Provider: losingProvider{store}, LeaseTTL: time.Hour})
	res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "hi"))
	if !errors.Is(err, sessions.ErrLeaseLost) || res != (runtime.TurnResult{}) {
		t.Fatalf("ProcessUserTurn = %+v, %v; want zero and ErrLeaseLost", res, err)
	}
	userOnly(t, store, "s1", "hi")
}

// The model is offered exactly the tools authz.ToolAllowed permits: a tool
// that declares memory.read under a name the contract table does not
// classify (process.exec) is not offered to a paired speaker.
func TestOfferFollowsToolAllowed(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	rec := &recorder{}
	p := script(t, `{"turns":[{"text":"ok"}]}`)
	rt := runtime.New(runtime.Options{Store: store, Provider: p,
		Registry: registry(t, rec.tool("memory_status", authz.CapMemoryRead, nil), rec.tool("custom_probe", authz.CapMemoryRead, nil),
			rec.tool("read", authz.CapFSRead, nil))})
	if _, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "hi")); err != nil {
		t.Fatal(err)
	}
	var offered []string
	for _, s := range p.Requests()[0].Tools {
		offered = append(offered, s.Name)
	}
	if diff := cmp.Diff([]string{"memory_status"}, offered); diff != "" {
		t.Errorf("tools offered to a paired speaker (-want +got):\n%s", diff)
	}
}

// A turn keeps its request id with its user message and its reply, so
// that StoredReply finds the reply of that turn, and of no other, in the
// session's branch: the answer of a turn whose caller stopped after the
// final write.
func TestStoredReply(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	p := script(t, `{"turns":[
		{"text":"Looking.","tool_calls":[{"id":"c1","name":"memory_search","arguments":{"query":"q"}}]},
		{"text":"First answer."},
		{"text":"Second answer."}
	]}`)
	rec := &recorder{}
	rt := runtime.New(runtime.Options{Store: store, Provider: p, Registry: registry(t, rec.tool("memory_search", authz.CapMemoryRead, nil))})
	first := mcpRequest(t, "s1", "first")
	first.RequestID = "task/one"
	res1, err := rt.ProcessUserTurn(t.Context(), first)
	if err != nil {
		t.Fatal(err)
	}
	second := mcpRequest(t, "s1", "second")
	second.RequestID = "task/two"
	res2, err := rt.ProcessUserTurn(t.Context(), second)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := store.Branch(t.Context(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   string
		want runtime.TurnResult
	}{{"task/one", res1}, {"task/two", res2}} {
		got, found := runtime.StoredReply(msgs, c.id)
		if !found || got != c.want {
			t.Errorf("StoredReply(%q) = %+v, %v; want %+v", c.id, got, found, c.want)
		}
	}
	if got, found := runtime.StoredReply(msgs, "task/three"); found {
		t.Errorf("StoredReply of a turn that stored nothing = %+v", got)
	}
	// A turn that stored only its user message has no reply.
	if got, found := runtime.StoredReply(msgs[:len(msgs)-1], "task/two"); found {
		t.Errorf("StoredReply without the reply = %+v", got)
	}
}
