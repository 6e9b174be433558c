package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

var leaseTests = []test{
	{"AcquireReleaseOneHandle", testLeaseOneHandle},
	{"ContentionTwoHandles", testLeaseContention},
	{"RaceTwoHandles", testLeaseRace},
	{"RenewAndLost", testLeaseRenew},
	{"ExpiryTakeover", testLeaseExpiry},
	{"Validation", testLeaseValidation},
	{"Independent", testLeaseIndependent},
	{"InterruptedAcquire", testLeaseInterruptedAcquire},
}

const longTTL = time.Minute

func acquire(t *testing.T, s sessions.Store, session, owner string, ttl time.Duration) {
	t.Helper()
	if err := s.AcquireTurn(ctxT(t), session, owner, ttl); err != nil {
		t.Fatalf("AcquireTurn(%q, %q) error: %v", session, owner, err)
	}
}

func wantBusy(t *testing.T, s sessions.Store, session, owner string) {
	t.Helper()
	if err := s.AcquireTurn(ctxT(t), session, owner, longTTL); !errors.Is(err, sessions.ErrBusy) {
		t.Fatalf("AcquireTurn(%q, %q) on a held lease error = %v, want ErrBusy", session, owner, err)
	}
}

func testLeaseOneHandle(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	acquire(t, s, "s", "p1", longTTL)
	wantBusy(t, s, "s", "p2")
	// Re-acquiring one's own lease succeeds (it renews).
	acquire(t, s, "s", "p1", longTTL)
	// Releasing someone else's lease is a no-op.
	if err := s.ReleaseTurn(ctx, "s", "p2"); err != nil {
		t.Fatalf("ReleaseTurn by non-holder error: %v, want nil", err)
	}
	wantBusy(t, s, "s", "p2")
	if err := s.ReleaseTurn(ctx, "s", "p1"); err != nil {
		t.Fatalf("ReleaseTurn error: %v", err)
	}
	if err := s.ReleaseTurn(ctx, "s", "p1"); err != nil {
		t.Fatalf("ReleaseTurn twice error: %v, want nil", err)
	}
	acquire(t, s, "s", "p2", longTTL)
	wantBusy(t, s, "s", "p1")
}

func testLeaseContention(t *testing.T, h *harness) {
	a, b := h.pair(t)
	ctx := ctxT(t)
	mustCreate(t, a, sessions.Session{ID: "s"})
	acquire(t, a, "s", "proc-a", longTTL)
	start := time.Now()
	wantBusy(t, b, "s", "proc-b")
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("AcquireTurn on a busy lease took %v, want it to fail fast", d)
	}
	if err := b.ReleaseTurn(ctx, "s", "proc-b"); err != nil {
		t.Fatal(err)
	}
	wantBusy(t, b, "s", "proc-b")
	if err := a.ReleaseTurn(ctx, "s", "proc-a"); err != nil {
		t.Fatal(err)
	}
	acquire(t, b, "s", "proc-b", longTTL)
	wantBusy(t, a, "s", "proc-a")
	if err := a.RenewTurn(ctx, "s", "proc-a", longTTL); !errors.Is(err, sessions.ErrLeaseLost) {
		t.Errorf("RenewTurn by non-holder on the other handle error = %v, want ErrLeaseLost", err)
	}
}

func testLeaseRace(t *testing.T, h *harness) {
	a, b := h.pair(t)
	ctx := ctxT(t)
	stores := []sessions.Store{a, b}
	for round := range 5 {
		session := fmt.Sprintf("s%d", round)
		mustCreate(t, a, sessions.Session{ID: session})
		winners, results := race(t, 8, fmt.Sprintf("round %d contender", round), sessions.ErrBusy, func(i int) error {
			return stores[i%2].AcquireTurn(ctx, session, fmt.Sprintf("owner-%d", i), longTTL)
		})
		if winners != 1 {
			t.Fatalf("round %d: %d contenders acquired the lease, want exactly 1 (results %v)", round, winners, results)
		}
	}
}

func testLeaseRenew(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	if err := s.RenewTurn(ctx, "s", "p1", longTTL); !errors.Is(err, sessions.ErrLeaseLost) {
		t.Errorf("RenewTurn without a lease error = %v, want ErrLeaseLost", err)
	}
	acquire(t, s, "s", "p1", longTTL)
	if err := s.RenewTurn(ctx, "s", "p1", longTTL); err != nil {
		t.Errorf("RenewTurn by holder error: %v", err)
	}
	if err := s.RenewTurn(ctx, "s", "p2", longTTL); !errors.Is(err, sessions.ErrLeaseLost) {
		t.Errorf("RenewTurn by non-holder error = %v, want ErrLeaseLost", err)
	}
	wantBusy(t, s, "s", "p2")
	if err := s.ReleaseTurn(ctx, "s", "p1"); err != nil {
		t.Fatal(err)
	}
	if err := s.RenewTurn(ctx, "s", "p1", longTTL); !errors.Is(err, sessions.ErrLeaseLost) {
		t.Errorf("RenewTurn after release error = %v, want ErrLeaseLost", err)
	}
}

// waitAcquire retries until the expired lease is taken over; leases run on
// the database clock, so the test does not assume the exact expiry instant.
func waitAcquire(t *testing.T, s sessions.Store, session, owner string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.AcquireTurn(ctxT(t), session, owner, longTTL)
		if err == nil {
			return
		}
		if !errors.Is(err, sessions.ErrBusy) {
			t.Fatalf("AcquireTurn(%q, %q) error = %v, want nil or ErrBusy while waiting for expiry", session, owner, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("AcquireTurn(%q, %q): the expired lease was never taken over", session, owner)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testLeaseExpiry(t *testing.T, h *harness) {
	a, b := h.pair(t)
	ctx := ctxT(t)
	mustCreate(t, a, sessions.Session{ID: "s"})
	// The holder "dies": a short lease it never renews nor releases.
	acquire(t, a, "s", "dead", 50*time.Millisecond)
	waitAcquire(t, b, "s", "heir")
	wantBusy(t, a, "s", "dead")
	if err := a.RenewTurn(ctx, "s", "dead", longTTL); !errors.Is(err, sessions.ErrLeaseLost) {
		t.Errorf("RenewTurn by the taken-over holder error = %v, want ErrLeaseLost", err)
	}
	// The old holder's late release must not drop the heir's lease.
	if err := a.ReleaseTurn(ctx, "s", "dead"); err != nil {
		t.Fatal(err)
	}
	wantBusy(t, a, "s", "other")

	// An expired lease nobody took over can still be renewed by its holder.
	mustCreate(t, a, sessions.Session{ID: "s2"})
	acquire(t, a, "s2", "slow", 20*time.Millisecond)
	time.Sleep(60 * time.Millisecond)
	if err := a.RenewTurn(ctx, "s2", "slow", longTTL); err != nil {
		t.Errorf("RenewTurn of an expired lease nobody took over error = %v, want nil", err)
	}
	wantBusy(t, b, "s2", "other")
}

func testLeaseValidation(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	if err := s.AcquireTurn(ctx, "s", "", longTTL); err == nil {
		t.Error("AcquireTurn(empty owner) succeeded, want an error")
	}
	if err := s.AcquireTurn(ctx, "s", "p", 0); err == nil {
		t.Error("AcquireTurn(ttl 0) succeeded, want an error")
	}
	if err := s.RenewTurn(ctx, "s", "p", -time.Second); err == nil {
		t.Error("RenewTurn(negative ttl) succeeded, want an error")
	}
	// The refused calls took no lease.
	acquire(t, s, "s", "p2", longTTL)
}

func testLeaseIndependent(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "a"})
	mustCreate(t, s, sessions.Session{ID: "b"})
	acquire(t, s, "a", "p1", longTTL)
	acquire(t, s, "b", "p2", longTTL)
	// Leases do not require the session to exist yet (a turn may reserve a
	// new session id before creating it).
	acquire(t, s, "not-yet-created", "p3", longTTL)
	wantBusy(t, s, "not-yet-created", "p4")
	// Deleting a session drops its lease.
	if err := s.DeleteSession(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, s, sessions.Session{ID: "a"})
	acquire(t, s, "a", "p5", longTTL)
}

// testLeaseInterruptedAcquire cancels AcquireTurn at every point of its
// run: before, during and after the write. Whatever the moment, an acquire
// that returns an error must leave no lease behind, or the session stays
// busy for a whole TTL (a client that cancels at once could keep any
// session busy for ever).
func testLeaseInterruptedAcquire(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	const rounds = 400
	interrupted, leaked := 0, 0
	for i := range rounds {
		owner := fmt.Sprintf("interrupted-%d", i)
		actx, cancel := context.WithCancel(ctx)
		// Spread the cancel over the acquire's duration: 0 to ~2 ms.
		timer := time.AfterFunc(time.Duration(i%40)*50*time.Microsecond, cancel)
		err := s.AcquireTurn(actx, "s", owner, longTTL)
		timer.Stop()
		cancel()
		if err == nil {
			if err := s.ReleaseTurn(ctx, "s", owner); err != nil {
				t.Fatalf("round %d: ReleaseTurn error: %v", i, err)
			}
			continue
		}
		interrupted++
		switch err := s.AcquireTurn(ctx, "s", "probe", longTTL); {
		case errors.Is(err, sessions.ErrBusy):
			leaked++
			if err := s.ReleaseTurn(ctx, "s", owner); err != nil {
				t.Fatalf("round %d: ReleaseTurn of the leaked lease error: %v", i, err)
			}
			continue
		case err != nil:
			t.Fatalf("round %d: AcquireTurn after an interrupted acquire error: %v", i, err)
		}
		if err := s.ReleaseTurn(ctx, "s", "probe"); err != nil {
			t.Fatalf("round %d: ReleaseTurn error: %v", i, err)
		}
	}
	t.Logf("%d rounds: %d acquires interrupted, %d left a lease behind", rounds, interrupted, leaked)
	if leaked > 0 {
		t.Errorf("%d of %d interrupted acquires left their lease behind, want 0", leaked, interrupted)
	}
}
