package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// memStore is an in-memory sessions.Store holding what the MCP server
// touches: sessions, message trees, turn leases and audit records. The
// embedded interface is nil; the server never calls the memory methods,
// and a test that did would panic.
type memStore struct {
	sessions.Store

	now func() time.Time

	mu       sync.Mutex
	sessions map[string]sessions.Session
	messages map[string]sessions.Message
	leases   map[string]string
	audit    []sessions.AuditRecord
	seq      int

	// Failure injection.
	failList, failGet, failCreate, failBranch error
	panicList                                 bool
	// branchHook, if set, runs at the start of every Branch call, outside
	// the lock (a test holds reads there); branches counts the calls.
	branchHook func()
	branches   int
}

func newMemStore(now func() time.Time) *memStore {
	return &memStore{
		now:      now,
		sessions: map[string]sessions.Session{},
		messages: map[string]sessions.Message{},
		leases:   map[string]string{},
	}
}

func (m *memStore) CreateSession(_ context.Context, s sessions.Session) (sessions.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failCreate != nil {
		return sessions.Session{}, m.failCreate
	}
	if s.ID == "" {
		return sessions.Session{}, errors.New("memStore: session id required")
	}
	if _, ok := m.sessions[s.ID]; ok {
		return sessions.Session{}, sessions.ErrExists
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = m.now()
	}
	if s.UpdatedAt.IsZero() {
		s.UpdatedAt = s.CreatedAt
	}
	m.sessions[s.ID] = s
	return s, nil
}

func (m *memStore) GetSession(_ context.Context, id string) (sessions.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failGet != nil {
		return sessions.Session{}, m.failGet
	}
	s, ok := m.sessions[id]
	if !ok {
		return sessions.Session{}, fmt.Errorf("session %q: %w", id, sessions.ErrNotFound)
	}
	return s, nil
}

func (m *memStore) ListSessions(_ context.Context, limit int) ([]sessions.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.panicList {
		panic("memStore: ListSessions exploded")
	}
	if m.failList != nil {
		return nil, m.failList
	}
	var out []sessions.Session
	for _, s := range m.sessions {
		if !s.Archived {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b sessions.Session) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func (m *memStore) DeleteSession(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[id]; !ok {
		return sessions.ErrNotFound
	}
	delete(m.sessions, id)
	for k, msg := range m.messages {
		if msg.SessionID == id {
			delete(m.messages, k)
		}
	}
	return nil
}

func (m *memStore) AppendMessages(_ context.Context, sessionID, parentID string, msgs []sessions.NewMessage, moveHead bool) ([]sessions.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return nil, sessions.ErrNotFound
	}
	if parentID != "" {
		if _, ok := m.messages[parentID]; !ok {
			return nil, sessions.ErrNotFound
		}
	}
	var out []sessions.Message
	parent := parentID
	for _, nm := range msgs {
		m.seq++
		msg := sessions.Message{
			ID: fmt.Sprintf("msg_%04d", m.seq), SessionID: sessionID, ParentID: parent,
			Role: nm.Role, Content: nm.Content, CreatedAt: m.now(), Metadata: nm.Metadata,
		}
		m.messages[msg.ID] = msg
		out = append(out, msg)
		parent = msg.ID
	}
	if moveHead && len(out) > 0 {
		s.HeadID = out[len(out)-1].ID
		s.UpdatedAt = m.now()
		m.sessions[sessionID] = s
	}
	return out, nil
}

func (m *memStore) Branch(_ context.Context, sessionID string) ([]sessions.Message, error) {
	m.mu.Lock()
	m.branches++
	hook := m.branchHook
	m.mu.Unlock()
	if hook != nil {
		hook()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failBranch != nil {
		return nil, m.failBranch
	}
	s, ok := m.sessions[sessionID]
	if !ok {
		return nil, sessions.ErrNotFound
	}
	var out []sessions.Message
	for id := s.HeadID; id != ""; id = m.messages[id].ParentID {
		out = append(out, m.messages[id])
	}
	slices.Reverse(out)
	return out, nil
}

// branchReads returns how many Branch calls were made.
func (m *memStore) branchReads() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.branches
}

func (m *memStore) AcquireTurn(_ context.Context, sessionID, owner string, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.leases[sessionID]; ok && o != owner {
		return fmt.Errorf("session %q: %w", sessionID, sessions.ErrBusy)
	}
	m.leases[sessionID] = owner
	return nil
}

func (m *memStore) RenewTurn(_ context.Context, sessionID, owner string, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leases[sessionID] != owner {
		return sessions.ErrLeaseLost
	}
	return nil
}

func (m *memStore) ReleaseTurn(_ context.Context, sessionID, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leases[sessionID] == owner {
		delete(m.leases, sessionID)
	}
	return nil
}

func (m *memStore) AppendAudit(_ context.Context, r sessions.NewAuditRecord) (sessions.AuditRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec := sessions.AuditRecord{
		ID: int64(len(m.audit) + 1), TS: m.now(), Type: r.Type, Origin: r.Origin,
		SessionID: r.SessionID, Payload: r.Payload,
	}
	m.audit = append(m.audit, rec)
	return rec, nil
}

// auditOf returns the payloads of the audit records of type typ.
func (m *memStore) auditOf(typ string) []map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []map[string]any
	for _, r := range m.audit {
		if r.Type != typ {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			panic(err)
		}
		out = append(out, p)
	}
	return out
}

func (m *memStore) allAudit() []sessions.AuditRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.audit)
}

func (m *memStore) hasSession(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.sessions[id]
	return ok
}

func (m *memStore) leaseHeld(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.leases[id]
	return ok
}

// fakeTurns is a TurnRunner whose behaviour is chosen by the prompt text:
//
//	block        publish turn.start, write nothing, wait for cancellation
//	block-write  write the user message, then wait for cancellation
//	ask          ask a question and report its answer
//	fail         finish with failed=true
//	error        return an error before writing anything
//	panic        panic
//	tools        publish tool calls that succeed, fail and are denied
//	text         stream assistant text in five pieces
//	text-slow    the same, pausing 1.5 s after the second piece
//	slow         answer after one second
//	commit-wait  answer, but return one second after the final write
//	anything else  answer "echo: <prompt>"
//
// Every turn takes the session's turn lease like the runtime does.
type fakeTurns struct {
	store     *memStore
	questions *questions.Registry

	mu       sync.Mutex
	requests []runtime.TurnRequest
	started  chan string // receives the session id of each started turn, if set
	// instead, when set, runs the turns instead (a test's own stand-in).
	instead conversation.TurnRunner
}

func (f *fakeTurns) ProcessUserTurn(ctx context.Context, req runtime.TurnRequest) (runtime.TurnResult, error) {
	f.mu.Lock()
	f.requests = append(f.requests, req)
	started, instead := f.started, f.instead
	f.mu.Unlock()
	if instead != nil {
		return instead.ProcessUserTurn(ctx, req)
	}
	// Like the runtime, the fake stops when a cancel wins its commit point.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if req.Commit != nil {
		go func() {
			select {
			case <-req.Commit.Done():
				stop(req.Commit.Err())
			case <-ctx.Done():
			}
		}()
	}
	const owner = "fake-turn"
	if err := f.store.AcquireTurn(ctx, req.SessionID, owner, time.Minute); err != nil {
		return runtime.TurnResult{}, err
	}
	defer f.store.ReleaseTurn(context.WithoutCancel(ctx), req.SessionID, owner)
	// Events carry what the runtime's carry, to the turn's observer.
	publish := func(typ string, data any) { req.Observe.Emit(typ, req.SessionID, data) }
	rid, sid := req.RequestID, req.SessionID
	publish(events.TurnStart, events.TurnStartData{RequestID: rid, SessionID: sid})
	if started != nil {
		started <- req.SessionID
	}
	sess, err := f.store.GetSession(ctx, req.SessionID)
	if err != nil {
		return runtime.TurnResult{}, err
	}
	failed := false
	answer := "echo: " + req.Text
	switch req.Text {
	case "block":
		<-ctx.Done()
		return runtime.TurnResult{}, context.Cause(ctx)
	case "block-write":
		if _, err := f.store.AppendMessages(ctx, req.SessionID, sess.HeadID, []sessions.NewMessage{{Role: sessions.RoleUser, Content: req.Text}}, true); err != nil {
			return runtime.TurnResult{}, err
		}
		<-ctx.Done()
		return runtime.TurnResult{}, context.Cause(ctx)
	case "ask":
		// As the gate asks: register, tell the observer, wait.
		p, err := f.questions.Register(questions.Question{SessionID: req.SessionID, Kind: questions.KindAsk, Prompt: "which one?"})
		if err != nil {
			return runtime.TurnResult{}, err
		}
		q := p.Question()
		publish(events.QuestionAsked, events.QuestionData{QuestionID: q.ID, Kind: string(q.Kind), SessionID: q.SessionID})
		answer = "question " + string(p.Wait(ctx).Status)
	case "slow":
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return runtime.TurnResult{}, context.Cause(ctx)
		}
	case "fail":
		failed = true
		answer = "the model failed"
	case "error":
		return runtime.TurnResult{}, errors.New("model provider unreachable")
	case "panic":
		panic("the turn exploded")
	case "tools":
		publish(events.ToolStart, events.ToolStartData{RequestID: rid, Tool: "memory_status", CallID: "c1"})
		publish(events.ToolEnd, events.ToolEndData{RequestID: rid, Tool: "memory_status", CallID: "c1"})
		publish(events.ToolStart, events.ToolStartData{RequestID: rid, Tool: "memory_grep", CallID: "c2"})
		publish(events.ToolEnd, events.ToolEndData{RequestID: rid, Tool: "memory_grep", CallID: "c2", IsError: true})
		publish(events.ToolStart, events.ToolStartData{RequestID: rid, Tool: "bash", CallID: "c3"})
		publish(events.ToolEnd, events.ToolEndData{RequestID: rid, Tool: "bash", CallID: "c3", IsError: true,
			Denied: true, ReasonCode: authz.ReasonHardConstraint, Capability: string(authz.CapProcessExec)})
	case "text", "text-slow":
		total := 0
		for i, piece := range []string{"Hel", "lo ", "wor", "ld", "!"} {
			total += len(piece)
			publish(events.TextProgress, events.TextData{RequestID: rid, Text: piece, Chars: total})
			if i == 1 && req.Text == "text-slow" {
				time.Sleep(1500 * time.Millisecond)
			}
		}
		answer = "Hello world!"
	}
	if err := ctx.Err(); err != nil {
		return runtime.TurnResult{}, context.Cause(ctx)
	}
	if req.Commit != nil && !req.Commit.Claim() {
		return runtime.TurnResult{}, req.Commit.Err()
	}
	msgs, err := f.store.AppendMessages(ctx, req.SessionID, sess.HeadID, []sessions.NewMessage{
		{Role: sessions.RoleUser, Content: req.Text},
		{Role: sessions.RoleAssistant, Content: answer},
	}, true)
	if err != nil {
		return runtime.TurnResult{}, err
	}
	if req.Text == "commit-wait" {
		time.Sleep(time.Second) // committed, not yet returned
	}
	publish(events.TurnEnd, events.TurnEndData{RequestID: rid, SessionID: sid, Failed: failed})
	return runtime.TurnResult{Text: answer, AssistantMessageID: msgs[1].ID, Failed: failed}, nil
}

func (f *fakeTurns) calls() []runtime.TurnRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// fakeTool is a runtime tool that records its runs.
type fakeTool struct {
	name   string
	cap    authz.Capability
	schema string
	run    func(ctx context.Context, args json.RawMessage, update func(string)) (tool.Result, error)

	mu   sync.Mutex
	runs int
}

func (t *fakeTool) Name() string                 { return t.name }
func (t *fakeTool) Description() string          { return "fake " + t.name }
func (t *fakeTool) Capability() authz.Capability { return t.cap }
func (t *fakeTool) InputSchema() json.RawMessage {
	if t.schema == "" {
		return json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	}
	return json.RawMessage(t.schema)
}

func (t *fakeTool) Execute(ctx context.Context, _ string, args json.RawMessage, update func(string)) (tool.Result, error) {
	t.mu.Lock()
	t.runs++
	t.mu.Unlock()
	if t.run == nil {
		return tool.TextResult(t.name + " ran"), nil
	}
	return t.run(ctx, args, update)
}

func (t *fakeTool) timesRun() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runs
}

// pngBytes is a 1x1 PNG.
var pngBytes = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
	0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82,
}

// testTools are the runtime tools of the test environment, by name.
//
//	memory_status  memory.read, reports two progress updates, returns text
//	memory_get     memory.read, returns a PNG image; with {"path":"wait"}
//	               it reports "waiting" and waits for cancellation
//	memory_search  memory.read, needs {"query": string}; a rule makes it "ask"
//	memory_grep    memory.read, runs and fails (IsError)
//	memory_browse  memory.read, returns content of an unsupported type
//	memory_update  memory.source.append; a rule denies it
//	read           fs.read, beyond the paired tier
//	bash           process.exec, a hard constraint for MCP
//	memory_promote memory.trusted.promote, registered but not exposed
//	custom_probe   memory.read declared, but its name is unclassified
//	               (process.exec): exposed, hidden by tools_list, denied
func testTools() map[string]*fakeTool {
	tools := []*fakeTool{
		{name: "memory_status", cap: authz.CapMemoryRead, run: func(_ context.Context, _ json.RawMessage, update func(string)) (tool.Result, error) {
			update("counting sources")
			update("counting pages")
			return tool.TextResult("3 sources, 1 trusted page"), nil
		}},
		{name: "memory_get", cap: authz.CapMemoryRead, schema: `{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}`,
			run: func(ctx context.Context, args json.RawMessage, update func(string)) (tool.Result, error) {
				var a struct{ Path string }
				if err := json.Unmarshal(args, &a); err != nil {
					return tool.Result{}, err
				}
				if a.Path == "wait" {
					update("waiting")
					<-ctx.Done()
					return tool.Result{}, ctx.Err()
				}
				return tool.Result{Content: []tool.Content{tool.Text("a picture:"), tool.Image(pngBytes, "image/png")}}, nil
			}},
		{name: "memory_search", cap: authz.CapMemoryRead, schema: `{"type":"object","properties":{"query":{"type":"string","minLength":1}},"required":["query"],"additionalProperties":false}`},
		{name: "memory_grep", cap: authz.CapMemoryRead, run: func(context.Context, json.RawMessage, func(string)) (tool.Result, error) {
			return tool.Result{IsError: true, Content: []tool.Content{tool.Text("grep: secret internal detail")}, Details: map[string]any{"trace": "x"}}, nil
		}},
		{name: "memory_browse", cap: authz.CapMemoryRead, run: func(context.Context, json.RawMessage, func(string)) (tool.Result, error) {
			return tool.Result{Content: []tool.Content{{Type: "audio", Data: []byte{1}, MediaType: "audio/wav"}}}, nil
		}},
		{name: "memory_update", cap: authz.CapMemorySourceAppend},
		{name: "read", cap: authz.CapFSRead},
		{name: "bash", cap: authz.CapProcessExec, schema: `{"type":"object","properties":{"command":{"type":"string"}},"additionalProperties":false}`},
		{name: "memory_promote", cap: authz.CapMemoryTrustedPromote},
		{name: "custom_probe", cap: authz.CapMemoryRead},
	}
	m := map[string]*fakeTool{}
	for _, t := range tools {
		m[t.name] = t
	}
	return m
}

// testExposed is exposed_tools of the test environment: "write" is exposed
// but not registered, memory_promote registered but not exposed, and
// memory_status is listed twice.
var testExposed = []string{
	"memory_status", "memory_get", "memory_search", "memory_grep", "memory_browse",
	"memory_update", "read", "bash", "write", "memory_status", "custom_probe",
}

// testWorkDir is the speaker's working directory: /work/dir on Unix, the
// same below the temporary directory's drive on Windows (never created).
var testWorkDir = filepath.Join(filepath.VolumeName(os.TempDir())+string(filepath.Separator), "work", "dir")

var testRules = []authz.Rule{
	{Tool: "memory_update", Action: authz.ActionDeny},
	{Tool: "memory_search", Action: authz.ActionAsk},
}

const (
	testClientID  = "0123456789abcdef"
	testPrincipal = "owner/install/fedcba9876543210"
)

// env is a complete test environment: a Server over fake turns and the
// real runtime (registry, executor, bus, question registry, RunTool).
type env struct {
	srv       *Server
	conv      *conversation.Service
	store     *memStore
	turns     *fakeTurns
	questions *questions.Registry
	tools     map[string]*fakeTool
}

// envConfig is what a test may change in its environment: the server's
// options (Conversations and Speaker are filled in unless set), and what
// the conversation service is built from.
type envConfig struct {
	Options
	// Store is the conversation service's store (default the memStore).
	Store sessions.Store
	// Runtime runs the tool calls, and the turns when it is not the
	// default one (a test that runs real turns sets its own).
	Runtime *runtime.Runtime
	// OnAuditFailure is the service's audit failure mode.
	OnAuditFailure conversation.AuditFailure
}

// newEnv builds the environment. Session ids are mcp_ followed by a
// counter, so runs are reproducible.
func newEnv(tweak func(*envConfig)) (*env, error) {
	qs := questions.New(nil)
	store := newMemStore(time.Now)
	reg := tool.NewRegistry()
	tools := testTools()
	for _, name := range []string{"memory_status", "memory_get", "memory_search", "memory_grep", "memory_browse", "memory_update", "read", "bash", "memory_promote", "custom_probe"} {
		if err := reg.Register(tools[name]); err != nil {
			return nil, err
		}
	}
	turns := &fakeTurns{store: store, questions: qs}
	rules, err := authz.NewRules(testRules...)
	if err != nil {
		return nil, err
	}
	speaker, err := authz.NewMCPClient(testClientID, testPrincipal, authz.Scope{Rules: rules, WorkDirs: []string{testWorkDir}})
	if err != nil {
		return nil, err
	}
	rt := runtime.New(runtime.Options{Store: store, Registry: reg, Questions: qs,
		Executor: tool.NewExecutor(&tool.ExecutorOptions{StopGrace: time.Second})})
	cfg := envConfig{
		Options: Options{Speaker: speaker, ExposedTools: testExposed, Version: "1.2.3-test"},
		Store:   store, Runtime: rt,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	var n int
	var mu sync.Mutex
	co := conversation.Options{
		Store: cfg.Store, Runtime: cfg.Runtime, Questions: qs, OnAuditFailure: cfg.OnAuditFailure,
		NewSessionID: func(prefix string) string {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("%s%032x", prefix, n)
		},
	}
	if cfg.Runtime == rt { // unless a test runs real turns
		co.Turns = turns
	}
	conv, err := conversation.New(co)
	if err != nil {
		return nil, err
	}
	if cfg.Conversations == nil {
		cfg.Conversations = conv
	}
	srv, err := New(cfg.Options)
	if err != nil {
		return nil, err
	}
	return &env{srv: srv, conv: conv, store: store, turns: turns, questions: qs, tools: tools}, nil
}
