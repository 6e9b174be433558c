package conversation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	principal = "owner/install/fedcba9876543210"
	clientID  = "0123456789abcdef"
)

// fixture is a conversation service over an SQLite store with an audit
// key, the real runtime answering from a script, and one tool of each
// kind the tests need.
type fixture struct {
	store sessions.Store
	qs    *questions.Registry
	svc   *conversation.Service
	ran   *int
}

type fixtureOptions struct {
	script string // the scripted model's turns
	turns  conversation.TurnRunner
	store  func(sessions.Store) sessions.Store // wraps the store
	audit  conversation.AuditFailure
}

func newFixture(t *testing.T, o fixtureOptions) *fixture {
	t.Helper()
	key := bytes.Repeat([]byte{7}, 32)
	st, err := sqlite.OpenWith(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "openprogram.db"), &sessions.Options{AuditKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var store sessions.Store = st
	if o.store != nil {
		store = o.store(st)
	}
	if o.script == "" {
		o.script = `{"turns":[{"text":"hello"}]}`
	}
	s, err := scripted.Parse([]byte(o.script))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	reg := tool.NewRegistry()
	for _, tl := range []tool.Tool{
		&tool.Func{ToolName: "memory_status", Desc: "counts", Schema: json.RawMessage(`{"type":"object"}`), Cap: authz.CapMemoryRead,
			Run: func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
				ran++
				return tool.TextResult("3 sources"), nil
			}},
		&tool.Func{ToolName: "bash", Desc: "runs", Schema: json.RawMessage(`{"type":"object"}`), Cap: authz.CapProcessExec,
			Run: func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
				ran++
				return tool.TextResult("ran"), nil
			}},
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	qs := questions.New(nil)
	rt := runtime.New(runtime.Options{Store: store, Registry: reg, Questions: qs, Provider: scripted.New(s),
		Standing: conversation.StandingApprovals(store, nil)})
	svc, err := conversation.New(conversation.Options{Store: store, Runtime: rt, Turns: o.turns, Questions: qs, OnAuditFailure: o.audit})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{store: store, qs: qs, svc: svc, ran: &ran}
}

func (f *fixture) line(t *testing.T, sp authz.Speaker, via string) *conversation.Line {
	t.Helper()
	l, err := f.svc.Open(sp, &conversation.LineOptions{Via: via})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(conversation.ReasonConnectionClosed) })
	return l
}

// records returns the types of the audit records, oldest first, after the
// store's own first one (audit.keyed).
func (f *fixture) records(t *testing.T) []string {
	t.Helper()
	recs, err := f.store.TailAudit(t.Context(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(recs, func(a, b sessions.AuditRecord) int { return int(a.ID - b.ID) })
	var types []string
	for _, r := range recs {
		if r.Type != sessions.AuditKeyed {
			types = append(types, r.Type)
		}
	}
	return types
}

func client(t *testing.T) authz.Speaker {
	t.Helper()
	sp, err := authz.NewMCPClient(clientID, principal, authz.Scope{WorkDirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func owner(t *testing.T, interactive bool) authz.Speaker {
	t.Helper()
	sp, err := authz.NewOwner(principal, interactive, authz.Scope{WorkDirs: []string{t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// run admits and sends one turn.
func run(t *testing.T, l *conversation.Line, requestID any, sessionID, text string, o conversation.SendOptions) (conversation.Reply, error) {
	t.Helper()
	turn := l.NewTurn(requestID, sessionID, text)
	if err := l.Admit(t.Context(), turn); err != nil {
		return conversation.Reply{}, err
	}
	return l.Send(t.Context(), turn, o)
}

// TestOneSessionCreationForEverySpeaker: the one place a session is made
// names it by the speaker (mcp_, cli_), gives it the main agent, the
// speaker's source and a title from the text, and writes the speaker's
// records: the MCP client's request before it, the owner's creation.
func TestOneSessionCreationForEverySpeaker(t *testing.T) {
	f := newFixture(t, fixtureOptions{script: `{"turns":[{"text":"one"},{"text":"two"}]}`})
	for _, c := range []struct {
		name    string
		sp      authz.Speaker
		prefix  string
		source  string
		records []string
	}{
		{"mcp", client(t), "mcp_", authz.SourceMCP, []string{sessions.AuditPromptRequested, sessions.AuditPromptCompleted}},
		{"owner", owner(t, false), "cli_", authz.SourceCLI, []string{sessions.AuditOwnerSessionCreated}},
	} {
		before := len(f.records(t))
		l := f.line(t, c.sp, "prompt")
		reply, err := run(t, l, "r-"+c.name, "", "Plan the week", conversation.SendOptions{})
		if err != nil || reply.Failed {
			t.Fatalf("%s: Send = %+v, %v", c.name, reply, err)
		}
		sess, err := f.store.GetSession(t.Context(), reply.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if len(sess.ID) != len(c.prefix)+32 || sess.ID[:len(c.prefix)] != c.prefix || sess.AgentID != conversation.Agent ||
			sess.Source != c.source || sess.Title != "Plan the week" {
			t.Errorf("%s: session %+v, want %s<32 hex>, agent %s, source %s", c.name, sess, c.prefix, conversation.Agent, c.source)
		}
		if got := f.records(t)[before:]; !slices.Equal(got, c.records) {
			t.Errorf("%s: records %v, want %v", c.name, got, c.records)
		}
	}
}

// refusingAudit is a store whose audit appends fail.
type refusingAudit struct{ sessions.Store }

func (refusingAudit) AppendAudit(context.Context, sessions.NewAuditRecord) (sessions.AuditRecord, error) {
	return sessions.AuditRecord{}, errors.New("disk full")
}

// TestNothingRunsUnaudited: a refused request record refuses the turn and
// the tool call before anything of them happens; audit.on_failure log
// runs them.
func TestNothingRunsUnaudited(t *testing.T) {
	for _, mode := range []conversation.AuditFailure{conversation.AuditRefuse, conversation.AuditLog} {
		f := newFixture(t, fixtureOptions{audit: mode, store: func(s sessions.Store) sessions.Store { return refusingAudit{s} }})
		l := f.line(t, client(t), "")
		turn := l.NewTurn(1, "", "hi")
		err := l.Admit(t.Context(), turn)
		_, callErr := l.CallTool(t.Context(), conversation.ToolCall{RequestID: 2, ID: "c", Name: "memory_status"})
		list, lerr := f.store.ListSessions(t.Context(), 10)
		if lerr != nil {
			t.Fatal(lerr)
		}
		switch mode {
		case conversation.AuditRefuse:
			if !errors.Is(err, conversation.ErrAuditUnavailable) || !errors.Is(callErr, conversation.ErrAuditUnavailable) || *f.ran != 0 || len(list) != 0 {
				t.Errorf("refuse: Admit %v, CallTool %v, tool ran %d, sessions %d; want both refused and nothing done", err, callErr, *f.ran, len(list))
			}
		case conversation.AuditLog:
			if err != nil || callErr != nil || *f.ran != 1 {
				t.Errorf("log: Admit %v, CallTool %v, tool ran %d; want both to go on", err, callErr, *f.ran)
			}
		}
	}
}

// gatedTurns is a turn runner that keeps the runtime's contract (commit
// point, lease) and waits for release before it writes its answer.
type gatedTurns struct {
	store   sessions.Store
	started chan string
	release chan struct{}
}

func (g *gatedTurns) ProcessUserTurn(ctx context.Context, req runtime.TurnRequest) (runtime.TurnResult, error) {
	const owner = "gated"
	if err := g.store.AcquireTurn(ctx, req.SessionID, owner, time.Minute); err != nil {
		return runtime.TurnResult{}, err
	}
	defer g.store.ReleaseTurn(context.WithoutCancel(ctx), req.SessionID, owner)
	g.started <- req.SessionID
	select {
	case <-g.release:
	case <-req.Commit.Done():
		return runtime.TurnResult{}, req.Commit.Err()
	}
	if !req.Commit.Claim() {
		return runtime.TurnResult{}, req.Commit.Err()
	}
	msgs, err := g.store.AppendMessages(ctx, req.SessionID, "", []sessions.NewMessage{{Role: sessions.RoleUser, Content: req.Text}, {Role: sessions.RoleAssistant, Content: "late"}}, true)
	if err != nil {
		return runtime.TurnResult{}, err
	}
	return runtime.TurnResult{Text: "late", AssistantMessageID: msgs[1].ID}, nil
}

// TestOneTurnPerSessionAndRequest: on a line, a request id and a session
// run one turn at a time, and a closed line takes none.
func TestOneTurnPerSessionAndRequest(t *testing.T) {
	g := &gatedTurns{started: make(chan string, 4), release: make(chan struct{})}
	f := newFixture(t, fixtureOptions{turns: g})
	g.store = f.store
	l := f.line(t, client(t), "")
	first := l.NewTurn(4, "", "first")
	done := make(chan error, 1)
	go func() {
		_, err := l.Send(t.Context(), first, conversation.SendOptions{})
		done <- err
	}()
	<-g.started
	for _, c := range []struct {
		turn conversation.Turn
		want error
	}{
		{l.NewTurn(4, "", "same id"), conversation.ErrDuplicateRequest},
		{l.NewTurn(5, first.SessionID, "same session"), conversation.ErrSessionBusy},
	} {
		if _, err := l.Send(t.Context(), c.turn, conversation.SendOptions{}); !errors.Is(err, c.want) {
			t.Errorf("Send(%v, %s) = %v, want %v", c.turn.RequestID, c.turn.Text, err, c.want)
		}
	}
	close(g.release)
	if err := <-done; err != nil {
		t.Fatalf("first turn: %v", err)
	}
	l.Close(conversation.ReasonConnectionClosed)
	if _, err := l.Send(t.Context(), l.NewTurn(6, "", "after"), conversation.SendOptions{}); !errors.Is(err, conversation.ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
}

// TestCancelWinsTheCommitPoint: a cancel that wins stops the turn: Send
// says why, nothing of the result is written, the new session goes, the
// front end's OnCancel runs and nothing more is observed, and the record
// is written once, whatever cancels after it.
func TestCancelWinsTheCommitPoint(t *testing.T) {
	g := &gatedTurns{started: make(chan string, 1), release: make(chan struct{})}
	f := newFixture(t, fixtureOptions{turns: g})
	g.store = f.store
	l := f.line(t, client(t), "")
	turn := l.NewTurn(7, "", "stop me")
	var onCancel int
	done := make(chan error, 1)
	go func() {
		_, err := l.Send(t.Context(), turn, conversation.SendOptions{OnCancel: func() { onCancel++ }})
		done <- err
	}()
	sid := <-g.started
	cancelled, answered := l.CancelSession(sid, conversation.ReasonPromptCancel)
	if !cancelled {
		t.Fatal("CancelSession lost to a turn that had not committed")
	}
	err := <-done
	<-answered
	var ce *conversation.CancelledError
	if !errors.As(err, &ce) || ce.Reason != conversation.ReasonPromptCancel || !errors.Is(err, conversation.ErrCancelled) {
		t.Fatalf("Send = %v, want a cancel with reason prompt_cancel", err)
	}
	if again, _ := l.CancelSession(sid, conversation.ReasonPromptCancel); again || l.Cancel(7, conversation.ReasonConnectionClosed) {
		t.Error("a second cancel won")
	}
	if onCancel != 1 {
		t.Errorf("OnCancel ran %d times, want once", onCancel)
	}
	if _, err := f.store.GetSession(t.Context(), sid); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("the cancelled turn's new session is still there (%v)", err)
	}
	n := 0
	for _, r := range f.records(t) {
		if r == sessions.AuditRequestCancelled {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d cancel records, want 1", n)
	}
}

// TestTurnDenialsAreAuditedAndQuestionsDeclined: every denial of an MCP
// client's turn is recorded by the line, before the front end sees it;
// the owner's denials are not MCP records.
func TestTurnDenialsAreAuditedAndQuestionsDeclined(t *testing.T) {
	script := `{"turns":[{"tool_calls":[{"id":"c1","name":"bash","arguments":{}},{"id":"c2","name":"memory_status"}]},{"text":"done"}]}`
	f := newFixture(t, fixtureOptions{script: script})
	l := f.line(t, client(t), "")
	var mu sync.Mutex
	var seen []string
	observe := func(e events.Event) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, e.Type)
		if e.Type == events.ToolEnd && e.Data.(events.ToolEndData).Denied {
			if recs := f.records(t); recs[len(recs)-1] != sessions.AuditToolDenied {
				t.Errorf("the front end saw the denial before its record: %v", recs)
			}
		}
	}
	reply, err := run(t, l, 9, "", "try things", conversation.SendOptions{Observe: observe})
	if err != nil || reply.Failed {
		t.Fatalf("Send = %+v, %v", reply, err)
	}
	want := []string{events.TurnStart, events.ToolStart, events.ToolEnd, events.ToolStart, events.ToolEnd, events.TextProgress, events.TurnEnd}
	if seen = slices.Compact(seen); !slices.Equal(seen, want) {
		t.Errorf("observed %v, want %v", seen, want)
	}
	if *f.ran != 1 {
		t.Errorf("tools ran %d times, want memory_status once", *f.ran)
	}
	recs, err := f.store.TailAudit(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var denied []conversation.ToolDeniedPayload
	for _, r := range recs {
		if r.Type == sessions.AuditToolDenied {
			var p conversation.ToolDeniedPayload
			if err := json.Unmarshal(r.Payload, &p); err != nil {
				t.Fatal(err)
			}
			denied = append(denied, p)
		}
	}
	wantDenied := []conversation.ToolDeniedPayload{{Tool: "bash", ReasonCode: authz.ReasonHardConstraint, Capability: string(authz.CapProcessExec), ClientID: clientID, InTurn: true}}
	if !slices.Equal(denied, wantDenied) {
		t.Errorf("denial records %+v, want %+v", denied, wantDenied)
	}
}

// TestApprovalsAreTheOwners: only the owner's line keeps standing
// approvals; the gate's standing answer never reads them for anyone else.
func TestApprovalsAreTheOwners(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := t.Context()
	if _, err := f.store.CreateSession(ctx, sessions.Session{ID: "s1", AgentID: conversation.Agent, Source: authz.SourceCLI}); err != nil {
		t.Fatal(err)
	}
	mcp := f.line(t, client(t), "")
	a := conversation.Approval{SessionID: "s1", Tool: "write", Capability: "fs.write", Decision: conversation.DecisionAllowSession}
	if _, err := mcp.Approve(ctx, a); !errors.Is(err, conversation.ErrNotOwner) {
		t.Errorf("Approve on the MCP client's line = %v, want ErrNotOwner", err)
	}
	if tools, _ := f.store.SessionAllowances(ctx, "s1"); len(tools) != 0 {
		t.Fatalf("the MCP client's approval was kept: %v", tools)
	}
	own := f.line(t, owner(t, true), "chat")
	if _, err := own.Approve(ctx, conversation.Approval{SessionID: "s1", Tool: "write", Decision: "maybe"}); err == nil {
		t.Error("Approve with an unknown decision succeeded")
	}
	if _, err := own.Approve(ctx, a); err != nil {
		t.Fatal(err)
	}
	standing := conversation.StandingApprovals(f.store, nil)
	call := questions.Approval{Tool: "write", Capability: "fs.write", CallID: "c"}
	if !standing(ctx, owner(t, false), "s1", call) {
		t.Error("the owner's standing approval did not answer")
	}
	for name, sp := range map[string]authz.Speaker{"mcp": client(t), "zero": {}} {
		if standing(ctx, sp, "s1", call) {
			t.Errorf("%s: a standing approval answered", name)
		}
	}
	// Only the person at an interactive line answers questions.
	p, err := f.qs.Register(questions.Question{SessionID: "s1", Kind: questions.KindAsk, Prompt: "?"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mcp.Question(p.ID()); ok || mcp.Answer(p.ID(), "yes", false) {
		t.Error("the MCP client's line read or answered the owner's question")
	}
	if _, ok := own.Question(p.ID()); !ok || !own.Answer(p.ID(), "yes", false) {
		t.Error("the owner's line could not answer its question")
	}
	got := f.records(t)
	want := []string{sessions.AuditOwnerApproval, sessions.AuditOwnerApproval}
	if !slices.Equal(got, want) {
		t.Errorf("records %v, want the owner's decision and the standing answer", got)
	}
}

// TestOpenRefusesASpeakerAuthzDidNotMake: no line for a zero speaker.
func TestOpenRefusesASpeakerAuthzDidNotMake(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	if _, err := f.svc.Open(authz.Speaker{}, nil); !errors.Is(err, authz.ErrInvalidSpeaker) {
		t.Errorf("Open(zero speaker) = %v, want ErrInvalidSpeaker", err)
	}
	for name, o := range map[string]conversation.Options{
		"no store":   {},
		"no runtime": {Store: f.store},
	} {
		if _, err := conversation.New(o); err == nil {
			t.Errorf("New with %s succeeded", name)
		}
	}

}

// TestCloseRacesSend: a line closed as soon as its turn is registered
// (a client that goes away as it sends) cancels the turn it finds, and
// Send ends with the cancel. Run with -race: the turn a Close finds must
// be whole before Send registers it.
func TestCloseRacesSend(t *testing.T) {
	g := &gatedTurns{started: make(chan string, 64), release: make(chan struct{})}
	f := newFixture(t, fixtureOptions{turns: g})
	g.store = f.store
	for i := range 50 {
		l, err := f.svc.Open(client(t), &conversation.LineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		turn := l.NewTurn(i, "", "hi")
		if err := l.Admit(t.Context(), turn); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := l.Send(t.Context(), turn, conversation.SendOptions{OnCancel: func() {}})
			done <- err
		}()
		for !l.Running(turn.SessionID) {
			goruntime.Gosched()
		}
		l.Close(conversation.ReasonConnectionClosed)
		if err := <-done; !errors.Is(err, conversation.ErrCancelled) {
			t.Fatalf("round %d: Send = %v, want the close's cancel", i, err)
		}
	}
}
