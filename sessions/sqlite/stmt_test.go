package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

// TestReadStatementsArePreparedOnce: the hot reads reuse one prepared
// statement each, from any number of goroutines, and fail cleanly once
// the store is closed.
func TestReadStatementsArePreparedOnce(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), DefaultFileName))
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []sessions.Session
	for i := range 5 {
		at := base.Add(time.Duration(i) * time.Second)
		got, err := s.CreateSession(ctx, sessions.Session{ID: fmt.Sprintf("s%d", i), AgentID: "main", Title: fmt.Sprintf("t%d", i), Source: "mcp", CreatedAt: at, UpdatedAt: at, Archived: i == 2})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Archived {
			want = append([]sessions.Session{got}, want...) // newest first
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				list, err := s.ListSessions(ctx, 10)
				if err != nil {
					t.Errorf("ListSessions: %v", err)
					return
				}
				if diff := cmp.Diff(want, list); diff != "" {
					t.Errorf("ListSessions mismatch (-want +got):\n%s", diff)
					return
				}
				if got, err := s.GetSession(ctx, "s2"); err != nil || !got.Archived {
					t.Errorf("GetSession(s2) = %+v, %v; want the archived session", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	s.stmtMu.Lock()
	n := len(s.stmts)
	s.stmtMu.Unlock()
	if n != 2 {
		t.Errorf("%d prepared read statements, want 2 (list and get)", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListSessions(ctx, 10); err == nil {
		t.Error("ListSessions after Close succeeded, want an error")
	}
	if _, err := s.GetSession(ctx, "s1"); err == nil || errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("GetSession after Close = %v, want a store error", err)
	}
}
