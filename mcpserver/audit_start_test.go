package mcpserver

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/sessions"
)

// slowStartStore holds the mcp.server.start record until gate closes, as
// a store whose disk sync is slow would.
type slowStartStore struct {
	*memStore
	gate chan struct{}
}

func (s *slowStartStore) AppendAudit(ctx context.Context, r sessions.NewAuditRecord) (sessions.AuditRecord, error) {
	if r.Type == AuditServerStart {
		<-s.gate
	}
	return s.memStore.AppendAudit(ctx, r)
}

// TestStartAuditDoesNotDelayInitialize: initialize is answered while the
// start record is still being written; a tools/call waits for it, so the
// start record stays the first of the connection, and the stop record
// follows.
func TestStartAuditDoesNotDelayInitialize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var store *slowStartStore
		e, err := newEnv(func(o *envConfig) {
			store = &slowStartStore{memStore: o.Store.(*memStore), gate: make(chan struct{})}
			o.Store = store
		})
		if err != nil {
			t.Fatal(err)
		}
		w := startWire(t.Context(), t, e)
		s := &stepper{t: t, w: w}
		s.send(handshake[0])
		if frames := s.frames(); len(frames) != 1 || frames[0]["result"] == nil {
			t.Fatalf("initialize with the start record pending = %v, want its result", frames)
		}
		s.send(handshake[1])
		if frames := s.call(1, contracts.ToolCall, map[string]any{"name": "read"}); len(frames) != 0 {
			t.Fatalf("tools/call answered before the start record was written: %v", frames)
		}
		if got := store.allAudit(); len(got) != 0 {
			t.Fatalf("audit records before the start record: %v", got)
		}
		close(store.gate)
		synctest.Wait()
		if text, isErr := resultText(t, s.frames()); !isErr || text != contracts.TextDeniedCapabilityPrefix+"fs.read" {
			t.Errorf("tool_call read = %q (isError %v), want the fs.read denial", text, isErr)
		}
		if err := w.close(); err != nil {
			t.Errorf("Serve = %v after EOF, want nil", err)
		}
		var types []string
		for _, r := range store.allAudit() {
			types = append(types, r.Type)
		}
		if want := []string{AuditServerStart, sessions.AuditToolRequested, sessions.AuditToolDenied, AuditServerStop}; !slices.Equal(types, want) {
			t.Errorf("audit types = %v, want %v", types, want)
		}
	})
}

// TestStopAuditWaitsForStart: a connection that ends while the start
// record is pending still writes start, then stop.
func TestStopAuditWaitsForStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var store *slowStartStore
		e, err := newEnv(func(o *envConfig) {
			store = &slowStartStore{memStore: o.Store.(*memStore), gate: make(chan struct{})}
			o.Store = store
		})
		if err != nil {
			t.Fatal(err)
		}
		w := startWire(t.Context(), t, e)
		w.inW.Close()
		synctest.Wait()
		if got := store.allAudit(); len(got) != 0 {
			t.Fatalf("audit records before the start record: %v", got)
		}
		close(store.gate)
		if err := w.close(); err != nil {
			t.Errorf("Serve = %v after EOF, want nil", err)
		}
		var types []string
		for _, r := range store.allAudit() {
			types = append(types, r.Type)
		}
		if want := []string{AuditServerStart, AuditServerStop}; !slices.Equal(types, want) {
			t.Errorf("audit types = %v, want %v", types, want)
		}
	})
}
