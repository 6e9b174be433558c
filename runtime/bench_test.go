package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
	"github.com/openprogram/openprogram/sessions"
)

const benchScript = `{"turns":[
	{"text":"Looking.","tool_calls":[{"name":"memory_search","arguments":{"query":"a"}}]},
	{"text":"Still looking.","tool_calls":[{"name":"memory_search","arguments":{"query":"b"}}]},
	{"text":"Here is what I found in your notes."}
]}`

// BenchmarkScriptedTurn3Steps is one turn of three model steps (two tool
// calls) with the scripted provider on SQLite, a fresh session each time.
// Compare with BenchmarkStoreWrites3Steps, the same store work alone.
func BenchmarkScriptedTurn3Steps(b *testing.B) {
	store := openStore(b, "")
	s, err := scripted.Parse([]byte(benchScript))
	if err != nil {
		b.Fatal(err)
	}
	rec := &recorder{}
	reg := registry(b, rec.tool("memory_search", authz.CapMemoryRead, nil))
	ctx := context.Background()
	req := mcpRequest(b, "", "what do my notes say?")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		sid := fmt.Sprintf("bench-%d", i)
		createSession(b, store, sid)
		rt := runtime.New(runtime.Options{Store: store, Registry: reg, Provider: scripted.New(s)})
		req.SessionID = sid
		res, err := rt.ProcessUserTurn(ctx, req)
		if err != nil || res.Failed {
			b.Fatalf("ProcessUserTurn = %+v, %v", res, err)
		}
	}
}

// BenchmarkStoreWrites3Steps does the store work of one 3-step turn without
// the runtime: session, lease, branch read, user message, the five-message
// reply chain, release.
func BenchmarkStoreWrites3Steps(b *testing.B) {
	store := openStore(b, "")
	ctx := context.Background()
	meta := json.RawMessage(`{"authority":{"speaker_kind":"client"},"source":"mcp"}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		sid := fmt.Sprintf("bench-%d", i)
		createSession(b, store, sid)
		if err := store.AcquireTurn(ctx, sid, "owner", 30*time.Second); err != nil {
			b.Fatal(err)
		}
		if _, err := store.Branch(ctx, sid); err != nil {
			b.Fatal(err)
		}
		user, err := store.AppendMessages(ctx, sid, "", []sessions.NewMessage{{Role: "user", Content: "what do my notes say?", Metadata: meta}}, true)
		if err != nil {
			b.Fatal(err)
		}
		chain := []sessions.NewMessage{
			{Role: "assistant", Content: "[scripted] Looking.", Metadata: meta},
			{Role: "tool", Content: "result of memory_search", Metadata: meta},
			{Role: "assistant", Content: "[scripted] Still looking.", Metadata: meta},
			{Role: "tool", Content: "result of memory_search", Metadata: meta},
			{Role: "assistant", Content: "[scripted] Here is what I found in your notes.", Metadata: meta},
		}
		if _, err := store.AppendMessages(ctx, sid, user[0].ID, chain, true); err != nil {
			b.Fatal(err)
		}
		if err := store.ReleaseTurn(ctx, sid, "owner"); err != nil {
			b.Fatal(err)
		}
	}
}

// memStore keeps just what a turn touches, in memory, so that
// BenchmarkScriptedTurn3StepsMemStore measures the runtime alone and a
// race test's round costs microseconds.
type memStore struct {
	sessions.Store // nil: other methods are never called by a turn
	// latency, slept after AppendMessages stored the messages and before it
	// reports them, is that of a real commit: a disk that has the
	// transaction but has not answered yet.
	latency time.Duration
	mu      sync.Mutex
	heads   map[string]string
	msgs    map[string]sessions.Message
	leases  map[string]string
	n       int
}

// head returns sid's head message; ok is false for an empty session.
func (m *memStore) head(sid string) (msg sessions.Message, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	msg, ok = m.msgs[m.heads[sid]]
	return msg, ok
}

func newMemStore() *memStore {
	return &memStore{heads: map[string]string{}, msgs: map[string]sessions.Message{}, leases: map[string]string{}}
}

func (m *memStore) CreateSession(_ context.Context, s sessions.Session) (sessions.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.heads[s.ID] = ""
	return s, nil
}

func (m *memStore) AcquireTurn(_ context.Context, sid, owner string, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.leases[sid]; ok && o != owner {
		return sessions.ErrBusy
	}
	m.leases[sid] = owner
	return nil
}

func (m *memStore) RenewTurn(context.Context, string, string, time.Duration) error { return nil }

func (m *memStore) ReleaseTurn(_ context.Context, sid, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leases[sid] == owner {
		delete(m.leases, sid)
	}
	return nil
}

func (m *memStore) Branch(_ context.Context, sid string) ([]sessions.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []sessions.Message
	for id := m.heads[sid]; id != ""; id = m.msgs[id].ParentID {
		out = append([]sessions.Message{m.msgs[id]}, out...)
	}
	return out, nil
}

func (m *memStore) AppendMessages(_ context.Context, sid, parent string, msgs []sessions.NewMessage, moveHead bool) ([]sessions.Message, error) {
	defer time.Sleep(m.latency)
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []sessions.Message
	for _, nm := range msgs {
		m.n++
		msg := sessions.Message{ID: fmt.Sprintf("m%d", m.n), SessionID: sid, ParentID: parent, Role: nm.Role, Content: nm.Content, Metadata: nm.Metadata}
		m.msgs[msg.ID] = msg
		out = append(out, msg)
		parent = msg.ID
	}
	if moveHead {
		m.heads[sid] = parent
	}
	return out, nil
}

// BenchmarkScriptedTurn3StepsMemStore is BenchmarkScriptedTurn3Steps on an
// in-memory store: the runtime's own cost per turn.
func BenchmarkScriptedTurn3StepsMemStore(b *testing.B) {
	store := newMemStore()
	s, err := scripted.Parse([]byte(benchScript))
	if err != nil {
		b.Fatal(err)
	}
	rec := &recorder{}
	reg := registry(b, rec.tool("memory_search", authz.CapMemoryRead, nil))
	ctx := context.Background()
	req := mcpRequest(b, "", "what do my notes say?")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		sid := fmt.Sprintf("bench-%d", i)
		createSession(b, store, sid)
		rt := runtime.New(runtime.Options{Store: store, Registry: reg, Provider: scripted.New(s)})
		req.SessionID = sid
		res, err := rt.ProcessUserTurn(ctx, req)
		if err != nil || res.Failed {
			b.Fatalf("ProcessUserTurn = %+v, %v", res, err)
		}
	}
}
