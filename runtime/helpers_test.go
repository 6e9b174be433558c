package runtime_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	principal = "owner/install/0123456789abcdef"
	clientID  = "fedcba9876543210"
)

// client is the MCP client's speaker in scope.
func client(t testing.TB, at authz.Scope) authz.Speaker {
	t.Helper()
	sp, err := authz.NewMCPClient(clientID, principal, at)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// owner is the interactive owner's speaker in scope.
func owner(t testing.TB, at authz.Scope) authz.Speaker {
	t.Helper()
	sp, err := authz.NewOwner(principal, true, at)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// observed is req with its events going to observe.
func observed(req runtime.TurnRequest, observe events.Observer) runtime.TurnRequest {
	req.Observe = observe
	return req
}

// mcpRequest is a turn as the MCP server makes it.
func mcpRequest(t testing.TB, sid, text string) runtime.TurnRequest {
	return runtime.TurnRequest{SessionID: sid, Text: text, AgentID: "main", RequestID: "req-1", Speaker: client(t, authz.Scope{})}
}

// openStore opens an SQLite store in dir (a fresh temp dir when empty).
func openStore(t testing.TB, dir string) sessions.Store {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s, err := sqlite.Open(context.Background(), "sqlite:"+filepath.Join(dir, "openprogram.db"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func createSession(t testing.TB, s sessions.Store, id string) {
	t.Helper()
	if _, err := s.CreateSession(context.Background(), sessions.Session{ID: id, AgentID: "main", Source: "mcp"}); err != nil {
		t.Fatalf("create session: %v", err)
	}
}

// scriptedModel is a scripted provider with the record of the requests
// it served.
type scriptedModel struct {
	*scripted.Provider
	*scripted.Recorder
}

// script is a scripted provider of js that records its requests.
func script(t testing.TB, js string) scriptedModel {
	t.Helper()
	s, err := scripted.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	p := scripted.New(s)
	return scriptedModel{Provider: p, Recorder: p.Record()}
}

// stored is a stored message reduced to what tests compare.
type stored struct {
	Role, Content string
	Meta          runtime.Metadata
}

func branch(t testing.TB, s sessions.Store, sid string) []stored {
	t.Helper()
	msgs, err := s.Branch(context.Background(), sid)
	if err != nil {
		t.Fatalf("Branch: %v", err)
	}
	out := []stored{}
	for _, m := range msgs {
		var meta runtime.Metadata
		if len(m.Metadata) > 0 {
			if err := json.Unmarshal(m.Metadata, &meta); err != nil {
				t.Fatalf("metadata of %s: %v", m.ID, err)
			}
		}
		// The turn's tags (its request id and reply mark) are
		// TestStoredReply's to check.
		meta.RequestID, meta.Reply = "", false
		out = append(out, stored{Role: m.Role, Content: m.Content, Meta: meta})
	}
	return out
}

// recorder is a fake tool that records its calls.
type recorder struct {
	mu    sync.Mutex
	calls []string // arguments of each call
}

func (r *recorder) tool(name string, capab authz.Capability, run func(ctx context.Context) (tool.Result, error)) *tool.Func {
	return &tool.Func{
		ToolName: name,
		Desc:     "Test tool " + name + ".",
		Schema:   json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"additionalProperties":false}`),
		Cap:      capab,
		Run: func(ctx context.Context, _ string, args json.RawMessage, _ func(string)) (tool.Result, error) {
			r.mu.Lock()
			r.calls = append(r.calls, string(args))
			r.mu.Unlock()
			if run != nil {
				return run(ctx)
			}
			return tool.TextResult("result of " + name), nil
		},
	}
}

func (r *recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func registry(t testing.TB, tools ...tool.Tool) *tool.Registry {
	t.Helper()
	reg := tool.NewRegistry()
	for _, tl := range tools {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

// collect records the events its observer receives; drain returns them.
func collect() (observe events.Observer, drain func() []events.Event) {
	var mu sync.Mutex
	var out []events.Event
	observe = func(e events.Event) {
		mu.Lock()
		defer mu.Unlock()
		out = append(out, e)
	}
	return observe, func() []events.Event {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(out)
	}
}

// gated is a provider whose calls block until released (or, with
// ignoreCtx, until released even after the context ended).
type gated struct {
	entered   chan struct{}
	release   chan struct{}
	resp      provider.Response
	ignoreCtx bool
}

func newGated(resp provider.Response) *gated {
	return &gated{entered: make(chan struct{}, 8), release: make(chan struct{}), resp: resp}
}

func (g *gated) Name() string { return "gated" }

func (g *gated) Stream(ctx context.Context, _ provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	g.entered <- struct{}{}
	if g.ignoreCtx {
		<-g.release
		onDelta(provider.Delta{Text: g.resp.Text})
		return g.resp, nil
	}
	select {
	case <-g.release:
		onDelta(provider.Delta{Text: g.resp.Text})
		return g.resp, nil
	case <-ctx.Done():
		return provider.Response{}, provider.Cancelled(ctx)
	}
}

// requestID is the request id an event of a turn carries.
func requestID(e events.Event) string {
	switch d := e.Data.(type) {
	case events.TurnStartData:
		return d.RequestID
	case events.TurnEndData:
		return d.RequestID
	case events.ToolStartData:
		return d.RequestID
	case events.ToolEndData:
		return d.RequestID
	case events.TextData:
		return d.RequestID
	}
	return ""
}

// typesOf lists the events' types, a run of turn.text events as one.
func typesOf(evs []events.Event) []string {
	var out []string
	for _, e := range evs {
		if e.Type == events.TextProgress && len(out) > 0 && out[len(out)-1] == events.TextProgress {
			continue
		}
		out = append(out, e.Type)
	}
	return out
}
