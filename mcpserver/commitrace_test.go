package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/sessions"
)

// settlingStore is the test store with the latency of a real commit: the
// reply is in the store before AppendMessages reports it, as with a disk
// that has the transaction but has not yet answered.
type settlingStore struct {
	*memStore
	latency time.Duration
}

func (s settlingStore) AppendMessages(ctx context.Context, sessionID, parentID string, msgs []sessions.NewMessage, moveHead bool) ([]sessions.Message, error) {
	out, err := s.memStore.AppendMessages(ctx, sessionID, parentID, msgs, moveHead)
	time.Sleep(s.latency)
	return out, err
}

// prompt_cancel races prompt_send's real turn, over and over, with the
// cancel spread across the whole turn. Whatever wins, the client, the
// session's branch and the audit log agree: cancelled:true means the
// prompt_send got the code-0 error, the head is still the round's user
// message (or the previous head, for a cancel before it was stored) and one mcp.request.cancelled was written; cancelled:false
// means the prompt_send got its result, the head is its reply, and the
// audit log has its mcp.prompt.completed and no cancellation.
func TestPromptCancelCommitRace(t *testing.T) {
	const rounds = 1000 // a longer soak: -count=N
	var store *memStore
	e, err := newEnv(func(o *envConfig) {
		store = o.Store.(*memStore)
		o.Store = settlingStore{memStore: store, latency: 200 * time.Microsecond}
		withRuntime(t, `{"turns":[]}`)(o)
	})
	if err != nil {
		t.Fatal(err)
	}
	cc := connect(t, e, "racer")
	ctx := t.Context()
	first, err := cc.c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "start"})
	if err != nil {
		t.Fatal(err)
	}
	sid := first.SessionID

	// Cancels are spread over a little more than an uncancelled round,
	// measured as the test goes.
	span := time.Hour
	for range 5 {
		start := time.Now()
		if _, err := cc.c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "warm up", SessionID: sid}); err != nil {
			t.Fatal(err)
		}
		span = min(span, time.Since(start))
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
		sid := fmt.Sprintf("race_%d", i)
		if _, err := store.CreateSession(ctx, sessions.Session{ID: sid, AgentID: conversation.Agent, Source: "mcp"}); err != nil {
			t.Fatal(err)
		}
		prevHead := ""
		prompt := fmt.Sprintf("round %d", i)
		auditBefore := len(store.allAudit())
		delay := time.Duration(rand.Int64N(int64(span)*5/4 + 1))
		var (
			wg     sync.WaitGroup
			res    contracts.PromptSendResult
			sendEr error
		)
		var took time.Duration
		wg.Go(func() {
			start := time.Now()
			res, sendEr = cc.c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: prompt, SessionID: sid})
			took = time.Since(start)
		})
		time.Sleep(delay)
		pc, err := cc.c.PromptCancel(ctx, sid)
		if err != nil {
			t.Fatalf("round %d: prompt_cancel: %v", i, err)
		}
		wg.Wait()

		msgs, err := cc.c.SessionGet(ctx, sid)
		if err != nil {
			t.Fatalf("round %d: session_get: %v", i, err)
		}
		var head contracts.Message
		if len(msgs) > 0 {
			head = msgs[len(msgs)-1]
		}
		cancelled, completed := 0, 0
		for _, r := range store.allAudit()[auditBefore:] {
			switch r.Type {
			case sessions.AuditRequestCancelled:
				cancelled++
			case sessions.AuditPromptCompleted:
				completed++
			}
		}
		if pc.Cancelled {
			won++
			var pe *contracts.ProtocolError
			if !errors.As(sendEr, &pe) || pe.Code != 0 {
				lie("round %d: prompt_cancel said cancelled:true, yet prompt_send = %+v, %v", i, res, sendEr)
			}
			if head.ID != prevHead && (head.Role != sessions.RoleUser || head.Content != prompt) {
				lie("round %d: prompt_cancel said cancelled:true, yet the session's head is a %s message %q: the turn committed", i, head.Role, head.Content)
			}
			if cancelled != 1 || completed != 0 {
				lie("round %d: cancelled:true, yet the audit log has %d cancellations and %d completions, want 1 and 0", i, cancelled, completed)
			}
		} else {
			lost++
			if sendEr != nil {
				lie("round %d: prompt_cancel said cancelled:false, yet prompt_send failed: %v", i, sendEr)
			}
			if head.ID != res.AssistantMsgID || head.Role != sessions.RoleAssistant {
				lie("round %d: cancelled:false, yet the head is %s %q, not the returned reply %q", i, head.Role, head.ID, res.AssistantMsgID)
			}
			if cancelled != 0 || completed != 1 {
				lie("round %d: cancelled:false, yet the audit log has %d cancellations and %d completions, want 0 and 1", i, cancelled, completed)
			}
		}
		if store.leaseHeld(sid) {
			lie("round %d: the turn lease is still held after prompt_send was answered", i)
		}
		if !pc.Cancelled {
			span = (span*15 + took) / 16
		}
	}
	t.Logf("%d rounds: %d prompt_cancel won (nothing written), %d lost (result returned and stored), %d disagreements", rounds, won, lost, lies)
}
