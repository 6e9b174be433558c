package runtime_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/sessions"
)

// countingStore counts the messages read from the store.
type countingStore struct {
	sessions.Store
	mu   sync.Mutex
	read int
}

func (s *countingStore) add(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read += n
}

func (s *countingStore) Read() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read
}

func (s *countingStore) Branch(ctx context.Context, sid string) ([]sessions.Message, error) {
	b, err := s.Store.Branch(ctx, sid)
	s.add(len(b))
	return b, err
}

func (s *countingStore) BranchBefore(ctx context.Context, sid, before string, limit int) ([]sessions.Message, error) {
	b, err := s.Store.BranchBefore(ctx, sid, before, limit)
	s.add(len(b))
	return b, err
}

func (s *countingStore) GetMessage(ctx context.Context, id string) (sessions.Message, error) {
	m, err := s.Store.GetMessage(ctx, id)
	s.add(1)
	return m, err
}

// answer is a model that always answers the same.
type answer struct{}

func (answer) Name() string { return "answer" }

func (answer) Stream(context.Context, provider.Request, func(provider.Delta)) (provider.Response, error) {
	return provider.Response{Text: "noted", StopReason: provider.StopEnd}, nil
}

// A turn on a long session reads the branch only as far back as the
// context window reaches, not the whole of it.
func TestLongSessionTurnReadsItsWindow(t *testing.T) {
	store := &countingStore{Store: openStore(t, "")}
	createSession(t, store, "s1")
	longSession(t, store, "s1", 500, 2000) // 2,000 messages
	rt := runtime.New(runtime.Options{Store: store, Provider: answer{}, ContextTokens: 8000})
	long := strings.Repeat("a long question ", 200) // about 1,000 tokens
	for range 10 {
		if res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", long)); err != nil || res.Failed {
			t.Fatalf("ProcessUserTurn = %+v, %v", res, err)
		}
	}
	before := store.Read()
	if res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", long)); err != nil || res.Failed {
		t.Fatalf("ProcessUserTurn = %+v, %v", res, err)
	}
	read := store.Read() - before
	if n := len(branch(t, store, "s1")); read > 100 {
		t.Errorf("a turn on a branch of %d messages read %d of them from the store, want only its window (at most 100)", n, read)
	}
}
