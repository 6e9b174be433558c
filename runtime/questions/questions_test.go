package questions_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/runtime/questions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAskAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := questions.New(nil)

		var ans questions.Answer
		var err error
		go func() {
			ans, err = reg.Ask(context.Background(), questions.Question{SessionID: "s1", Kind: questions.KindConfirm, Prompt: "Proceed?", Options: []string{"yes", "no"}})
		}()
		synctest.Wait()
		pend := reg.Pending("s1")
		if len(pend) != 1 || pend[0].ID == "" {
			t.Fatalf("Pending(s1) = %+v, want the question", pend)
		}
		id := pend[0].ID
		if len(pend) != 1 || pend[0].ID != id || pend[0].Prompt != "Proceed?" || pend[0].Timeout != questions.DefaultTimeout {
			t.Fatalf("Pending(s1) = %+v", pend)
		}
		if !reg.Resolve(id, questions.Answer{Value: "yes"}) {
			t.Fatal("Resolve = false, want true")
		}
		if reg.Resolve(id, questions.Answer{Status: questions.StatusDeclined}) {
			t.Error("second Resolve = true, want false (claim-once)")
		}
		synctest.Wait()
		if err != nil || ans != (questions.Answer{Status: questions.StatusAnswered, Value: "yes"}) {
			t.Errorf("Ask = %+v, %v; want answered yes", ans, err)
		}
		if !ans.Approved() {
			t.Errorf("Approved() = false for yes")
		}
		if len(reg.Pending("s1")) != 0 {
			t.Errorf("question still pending after resolve")
		}
	})
}

func TestDefaultTimeoutIs300s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := questions.New(nil)
		start := time.Now()
		ans, err := reg.Ask(context.Background(), questions.Question{SessionID: "s", Kind: questions.KindAsk, Prompt: "name?"})
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 300*time.Second {
			t.Errorf("timed out after %v, want 300s", got)
		}
		if ans != (questions.Answer{Status: questions.StatusTimeout}) {
			t.Errorf("Ask = %+v, want timeout", ans)
		}
	})
}

func TestPerQuestionAndRegistryTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := questions.New(&questions.Options{DefaultTimeout: 10 * time.Second})
		start := time.Now()
		ans, _ := reg.Ask(context.Background(), questions.Question{SessionID: "s", Kind: questions.KindAsk})
		if got := time.Since(start); got != 10*time.Second || ans.Status != questions.StatusTimeout {
			t.Errorf("registry default: %v after %v, want timeout after 10s", ans, got)
		}
		start = time.Now()
		ans, _ = reg.Ask(context.Background(), questions.Question{SessionID: "s", Kind: questions.KindAsk, Timeout: 2 * time.Second})
		if got := time.Since(start); got != 2*time.Second || ans.Status != questions.StatusTimeout {
			t.Errorf("own timeout: %v after %v, want timeout after 2s", ans, got)
		}
	})
}

func TestContextCancelResolvesCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := questions.New(nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ans, _ := reg.Ask(ctx, questions.Question{SessionID: "s", Kind: questions.KindApproval})
		if ans != (questions.Answer{Status: questions.StatusCancelled}) {
			t.Errorf("Ask = %+v, want cancelled", ans)
		}
		if len(reg.Pending("s")) != 0 {
			t.Errorf("cancelled question still pending")
		}
	})
}

func TestCancelSessionDeclinesOnlyThatSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := questions.New(nil)
		a1, _ := reg.Register(questions.Question{SessionID: "a", Kind: questions.KindAsk})
		a2, _ := reg.Register(questions.Question{SessionID: "a", Kind: questions.KindApproval})
		b1, _ := reg.Register(questions.Question{SessionID: "b", Kind: questions.KindConfirm})
		if n := reg.CancelSession("a"); n != 2 {
			t.Errorf("CancelSession(a) = %d, want 2", n)
		}
		if n := reg.CancelSession("a"); n != 0 {
			t.Errorf("second CancelSession(a) = %d, want 0", n)
		}
		for _, p := range []*questions.Pending{a1, a2} {
			if got := p.Wait(context.Background()); got != (questions.Answer{Status: questions.StatusDeclined}) {
				t.Errorf("question %s = %+v, want declined", p.ID(), got)
			}
		}
		select {
		case <-b1.Done():
			t.Fatal("a question of another session was resolved")
		default:
		}
		if got := reg.Pending("b"); len(got) != 1 || got[0].ID != b1.ID() {
			t.Errorf("Pending(b) = %+v, want b1", got)
		}
		if reg.Resolve(a1.ID(), questions.Answer{Value: "late"}) {
			t.Errorf("Resolve after CancelSession = true")
		}
		reg.Resolve(b1.ID(), questions.Answer{Status: questions.StatusDeclined, Value: "ignored"})
		if got := b1.Wait(context.Background()); got != (questions.Answer{Status: questions.StatusDeclined}) {
			t.Errorf("b1 = %+v, want declined without a value", got)
		}
	})
}

func TestClaimOnceUnderRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := questions.New(&questions.Options{DefaultTimeout: time.Second})
		for range 50 {
			p, _ := reg.Register(questions.Question{SessionID: "s", Kind: questions.KindAsk})
			var wins atomic.Int32
			var wg sync.WaitGroup
			wg.Go(func() {
				if reg.Resolve(p.ID(), questions.Answer{Value: "x"}) {
					wins.Add(1)
				}
			})
			wg.Go(func() { wins.Add(int32(reg.CancelSession("s"))) })
			wg.Go(func() {
				if reg.Resolve(p.ID(), questions.Answer{Status: questions.StatusDeclined}) {
					wins.Add(1)
				}
			})
			wg.Wait()
			if w := wins.Load(); w != 1 {
				t.Fatalf("%d resolvers won, want exactly 1", w)
			}
			_ = p.Wait(context.Background())
		}
	})
}

func TestRegisterValidates(t *testing.T) {
	reg := questions.New(nil)
	if _, err := reg.Register(questions.Question{SessionID: "s", Kind: "poll"}); err == nil {
		t.Errorf("Register(kind poll) = nil error")
	}
	if _, err := reg.Register(questions.Question{Kind: questions.KindAsk}); err == nil {
		t.Errorf("Register(no session) = nil error")
	}
	if _, err := reg.Ask(context.Background(), questions.Question{SessionID: "s"}); err == nil {
		t.Errorf("Ask(no kind) = nil error")
	}
	if reg.Resolve("q_missing", questions.Answer{}) {
		t.Errorf("Resolve(unknown) = true")
	}
	if _, ok := reg.Get("q_missing"); ok {
		t.Errorf("Get(unknown) found a question")
	}
}

func TestApproved(t *testing.T) {
	for _, c := range []struct {
		a    questions.Answer
		want bool
	}{
		{questions.Answer{Status: questions.StatusAnswered, Value: "allow"}, true},
		{questions.Answer{Status: questions.StatusAnswered, Value: "YES"}, true},
		{questions.Answer{Status: questions.StatusAnswered, Value: "deny"}, false},
		{questions.Answer{Status: questions.StatusDeclined, Value: "allow"}, false},
		{questions.Answer{Status: questions.StatusTimeout}, false},
	} {
		if got := c.a.Approved(); got != c.want {
			t.Errorf("%+v.Approved() = %v, want %v", c.a, got, c.want)
		}
	}
}
