package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/sessions"
)

// instant answers every call at once, so a race round costs little more
// than the turn's own store writes.
type instant struct{}

func (instant) Name() string { return "instant" }
func (instant) Stream(_ context.Context, _ provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	onDelta(provider.Delta{Text: "done"})
	return provider.Response{Text: "done", StopReason: provider.StopEnd}, nil
}

var errTestCancel = errors.New("cancelled by the test")

// A cancel racing the turn's final write: whichever wins, the caller, the
// result and the stored branch agree. A winning Cancel means the error
// carries its cause and the head is still the user message (or nothing,
// for a cancel before the user message was stored); a
// losing one means the result came back and the head is its assistant
// message. The cancels are spread over the whole turn, measured as the
// test goes, so many land right at the commit point.
func TestCommitPointCancelRace(t *testing.T) {
	store := newMemStore()
	store.latency = 200 * time.Microsecond
	createSession(t, store, "s1")
	rt := runtime.New(runtime.Options{Store: store, Provider: instant{}, LeaseTTL: time.Minute})
	const rounds = 3000 // a longer soak: -count=N

	// The span over which cancels are spread: a little longer than an
	// uncancelled turn, re-measured as the load of the machine changes.
	var span time.Duration
	for range 5 {
		start := time.Now()
		if _, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "warm up")); err != nil {
			t.Fatal(err)
		}
		span = max(span, time.Since(start))
	}

	won, lost, lies := 0, 0, 0
	lie := func(format string, args ...any) {
		t.Helper()
		if lies++; lies <= 5 {
			t.Errorf(format, args...)
		}
	}
	for i := range rounds {
		// A session of its own per round keeps every round's history, and
		// so its cost, the same.
		sid := fmt.Sprintf("race-%d", i)
		createSession(t, store, sid)
		req := mcpRequest(t, sid, fmt.Sprintf("round %d", i))
		req.Commit = runtime.NewCommit()
		delay := time.Duration(rand.Int64N(int64(span)*5/4 + 1))
		var cancelled bool
		var wg sync.WaitGroup
		wg.Go(func() {
			time.Sleep(delay)
			cancelled = req.Commit.Cancel(errTestCancel)
		})
		start := time.Now()
		res, err := rt.ProcessUserTurn(t.Context(), req)
		took := time.Since(start)
		wg.Wait()

		head, _ := store.head(sid)
		if cancelled {
			won++
			if !errors.Is(err, errTestCancel) || res != (runtime.TurnResult{}) {
				lie("round %d: Cancel won, yet ProcessUserTurn = %+v, %v; want zero and the cancel's cause", i, res, err)
			}
			if head.ID != "" && (head.Role != sessions.RoleUser || head.Content != req.Text) {
				lie("round %d: Cancel won, yet the head is a %s message %q: the turn's result was written", i, head.Role, head.Content)
			}
			if !errors.Is(req.Commit.Err(), errTestCancel) {
				t.Fatalf("round %d: Commit.Err() = %v after a winning Cancel", i, req.Commit.Err())
			}
		} else {
			lost++
			if err != nil {
				lie("round %d: Cancel lost, yet ProcessUserTurn failed: %v", i, err)
			}
			if head.ID != res.AssistantMessageID || head.Role != sessions.RoleAssistant {
				lie("round %d: Cancel lost, yet the head is %s %q, not the returned reply %q", i, head.Role, head.ID, res.AssistantMessageID)
			}
		}
		if !cancelled {
			span = (span*15 + took) / 16
		}
	}
	t.Logf("%d rounds: %d cancels won (nothing written), %d lost (result stored and returned), %d disagreements", rounds, won, lost, lies)
	for i := range rounds {
		checkReleased(t, store, fmt.Sprintf("race-%d", i))
	}
}

// A Cancel before the turn starts wins and the turn takes no lease; a
// Cancel after the turn returned loses; a Commit serves one turn.
func TestCommitBeforeAndAfter(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	rt := runtime.New(runtime.Options{Store: store, Provider: instant{}})

	req := mcpRequest(t, "s1", "never")
	req.Commit = runtime.NewCommit()
	if !req.Commit.Cancel(nil) {
		t.Fatal("Cancel before the turn started lost")
	}
	if _, err := rt.ProcessUserTurn(t.Context(), req); !errors.Is(err, context.Canceled) {
		t.Fatalf("ProcessUserTurn after Cancel: %v, want context.Canceled", err)
	}
	if got := branch(t, store, "s1"); len(got) != 0 {
		t.Errorf("a turn cancelled before it started stored %+v", got)
	}
	checkReleased(t, store, "s1")

	req = mcpRequest(t, "s1", "hello")
	req.Commit = runtime.NewCommit()
	res, err := rt.ProcessUserTurn(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if req.Commit.Cancel(errTestCancel) {
		t.Error("Cancel after the turn committed won")
	}
	if req.Commit.Err() != nil {
		t.Errorf("Commit.Err() = %v after a lost Cancel, want nil", req.Commit.Err())
	}
	select {
	case <-req.Commit.Done():
		t.Error("Done closed after a lost Cancel")
	default:
	}
	if _, err := rt.ProcessUserTurn(t.Context(), req); err == nil {
		t.Error("a second turn with the same Commit ran")
	}
	if got := branch(t, store, "s1"); len(got) != 2 || got[1].Content != res.Text {
		t.Errorf("branch = %+v, want the one committed turn", got)
	}

	// A turn that fails before its commit point (the session is busy) also
	// makes a later Cancel lose: it stopped nothing.
	if err := store.AcquireTurn(t.Context(), "s1", "other", time.Minute); err != nil {
		t.Fatal(err)
	}
	req = mcpRequest(t, "s1", "busy")
	req.Commit = runtime.NewCommit()
	if _, err := rt.ProcessUserTurn(t.Context(), req); !errors.Is(err, sessions.ErrBusy) {
		t.Fatalf("ProcessUserTurn on a busy session: %v, want ErrBusy", err)
	}
	if req.Commit.Cancel(errTestCancel) {
		t.Error("Cancel after a failed turn won")
	}
}

var errDurableRefused = errors.New("the store's commit point was taken by a cancel")

// A durable commit point: the turn's claim first takes the hook. A refused
// hook ends the turn cancelled with the hook's error and writes nothing of
// its result; an accepted one lets the turn commit; a Cancel that won
// first never reaches the hook; after a refused hook every Cancel loses.
func TestDurableCommit(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	rt := runtime.New(runtime.Options{Store: store, Provider: instant{}})

	calls := 0
	req := mcpRequest(t, "s1", "refused")
	req.Commit = runtime.NewDurableCommit(func() error { calls++; return errDurableRefused })
	res, err := rt.ProcessUserTurn(t.Context(), req)
	if !errors.Is(err, errDurableRefused) || res != (runtime.TurnResult{}) {
		t.Fatalf("ProcessUserTurn with a refused durable claim = %+v, %v; want zero and the hook's error", res, err)
	}
	if calls != 1 {
		t.Errorf("claim hook ran %d times, want 1", calls)
	}
	if got := branch(t, store, "s1"); len(got) != 1 || got[0].Role != sessions.RoleUser {
		t.Errorf("branch after a refused durable claim = %+v, want only the user message", got)
	}
	if !errors.Is(req.Commit.Err(), errDurableRefused) {
		t.Errorf("Commit.Err() = %v, want the hook's error", req.Commit.Err())
	}
	select {
	case <-req.Commit.Done():
	default:
		t.Error("Done not closed after a refused durable claim")
	}
	if req.Commit.Cancel(errTestCancel) {
		t.Error("Cancel after a refused durable claim won")
	}
	checkReleased(t, store, "s1")

	calls = 0
	req = mcpRequest(t, "s1", "accepted")
	req.Commit = runtime.NewDurableCommit(func() error { calls++; return nil })
	res, err = rt.ProcessUserTurn(t.Context(), req)
	if err != nil || calls != 1 {
		t.Fatalf("ProcessUserTurn with an accepted durable claim: %v (hook ran %d times)", err, calls)
	}
	if got := branch(t, store, "s1"); len(got) != 3 || got[2].Content != res.Text {
		t.Errorf("branch = %+v, want the committed turn after the refused one's user message", got)
	}
	if req.Commit.Cancel(errTestCancel) {
		t.Error("Cancel after a committed durable turn won")
	}

	calls = 0
	req = mcpRequest(t, "s1", "cancelled first")
	req.Commit = runtime.NewDurableCommit(func() error { calls++; return nil })
	if !req.Commit.Cancel(errTestCancel) {
		t.Fatal("Cancel before the turn started lost")
	}
	if _, err := rt.ProcessUserTurn(t.Context(), req); !errors.Is(err, errTestCancel) {
		t.Fatalf("ProcessUserTurn after Cancel: %v", err)
	}
	if calls != 0 {
		t.Errorf("claim hook ran %d times after a winning Cancel, want 0", calls)
	}
}
