package provider_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/runtime/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake answers each call with the next step: an error, or text delivered
// as deltas before an optional error.
type fake struct {
	steps []step
	calls int
}

type step struct {
	deltas []string
	err    error
}

func (f *fake) Name() string { return "fake" }

func (f *fake) Stream(ctx context.Context, _ provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	s := f.steps[min(f.calls, len(f.steps)-1)]
	f.calls++
	for _, d := range s.deltas {
		onDelta(provider.Delta{Text: d})
	}
	if s.err != nil {
		return provider.Response{}, s.err
	}
	return provider.Response{Text: strings.Join(s.deltas, ""), StopReason: provider.StopEnd}, nil
}

func perr(c provider.Class, retryAfter time.Duration) error {
	return &provider.Error{Class: c, RetryAfter: retryAfter, Err: errors.New("boom")}
}

func TestWithRetry(t *testing.T) {
	policy := provider.RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second, MaxRetryAfter: 10 * time.Second}
	tests := []struct {
		name      string
		steps     []step
		wantCalls int
		wantClass provider.Class // "" for success
		minWait   time.Duration
		maxWait   time.Duration
	}{
		{"success", []step{{deltas: []string{"ok"}}}, 1, "", 0, 0},
		{"server then success", []step{{err: perr(provider.ClassServer, 0)}, {deltas: []string{"ok"}}}, 2, "", 50 * time.Millisecond, 100 * time.Millisecond},
		{"network twice then success", []step{{err: perr(provider.ClassNetwork, 0)}, {err: perr(provider.ClassNetwork, 0)}, {deltas: []string{"ok"}}}, 3, "", 150 * time.Millisecond, 300 * time.Millisecond},
		{"rate limit honours retry-after", []step{{err: perr(provider.ClassRateLimit, 3*time.Second)}, {deltas: []string{"ok"}}}, 2, "", 3 * time.Second, 3 * time.Second},
		{"retry-after too long", []step{{err: perr(provider.ClassRateLimit, time.Minute)}}, 1, provider.ClassRateLimit, 0, 0},
		{"auth not retried", []step{{err: perr(provider.ClassAuth, 0)}}, 1, provider.ClassAuth, 0, 0},
		{"context length not retried", []step{{err: perr(provider.ClassContextLength, 0)}}, 1, provider.ClassContextLength, 0, 0},
		{"invalid request not retried", []step{{err: perr(provider.ClassInvalidRequest, 0)}}, 1, provider.ClassInvalidRequest, 0, 0},
		{"unclassified not retried", []step{{err: errors.New("plain")}}, 1, provider.ClassServer, 0, 0},
		{"gives up after max attempts", []step{{err: perr(provider.ClassServer, 0)}}, 4, provider.ClassServer, 350 * time.Millisecond, 700 * time.Millisecond},
		{"not after a delta", []step{{deltas: []string{"half"}, err: perr(provider.ClassNetwork, 0)}, {deltas: []string{"ok"}}}, 1, provider.ClassNetwork, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fake{steps: tt.steps}
				var retries []int
				pol := policy
				pol.OnRetry = func(attempt int, _ error, _ time.Duration) { retries = append(retries, attempt) }
				p := provider.WithRetry(f, pol)
				start := time.Now()
				_, err := p.Stream(t.Context(), provider.Request{}, func(provider.Delta) {})
				waited := time.Since(start)
				if got := provider.ClassOf(err); got != tt.wantClass {
					t.Errorf("Stream error = %v (class %q), want class %q", err, got, tt.wantClass)
				}
				if f.calls != tt.wantCalls {
					t.Errorf("inner provider called %d times, want %d", f.calls, tt.wantCalls)
				}
				if len(retries) != tt.wantCalls-1 {
					t.Errorf("OnRetry called for attempts %v, want %d calls", retries, tt.wantCalls-1)
				}
				if waited < tt.minWait || waited > tt.maxWait {
					t.Errorf("waited %s, want within [%s, %s]", waited, tt.minWait, tt.maxWait)
				}
			})
		})
	}
}

func TestWithRetryCancelDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fake{steps: []step{{err: perr(provider.ClassRateLimit, 5*time.Second)}}}
		p := provider.WithRetry(f, provider.RetryPolicy{})
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		_, err := p.Stream(ctx, provider.Request{}, nil)
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("Stream returned after %s, want 1s (at the cancel)", waited)
		}
		if provider.ClassOf(err) != provider.ClassCancelled || !errors.Is(err, context.Canceled) {
			t.Errorf("Stream error = %v, want cancelled", err)
		}
		if f.calls != 1 {
			t.Errorf("inner provider called %d times, want 1", f.calls)
		}
	})
}

func TestWithRetryDeliversDeltas(t *testing.T) {
	f := &fake{steps: []step{{err: perr(provider.ClassServer, time.Millisecond)}, {deltas: []string{"a", "b"}}}}
	p := provider.WithRetry(f, provider.RetryPolicy{})
	var got []string
	resp, err := p.Stream(t.Context(), provider.Request{}, func(d provider.Delta) { got = append(got, d.Text) })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a", "b"}, got); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if resp.Text != "ab" || p.Name() != "fake" {
		t.Errorf("text, name = %q, %q; want ab, fake", resp.Text, p.Name())
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		err  *provider.Error
		want string
	}{
		{&provider.Error{Class: provider.ClassRateLimit, RetryAfter: 1500 * time.Millisecond, Status: 429, Err: errors.New("slow down")},
			"model provider rate limited (retry after 1.5s) (HTTP 429): slow down"},
		{&provider.Error{Class: provider.ClassNetwork, Err: errors.New("dial tcp: connection refused")},
			"model provider endpoint unreachable or connection broken (check model.base_url): dial tcp: connection refused"},
		{&provider.Error{Class: provider.ClassAuth, Status: 401},
			"model provider authentication or account problem (check the API key and the account's quota) (HTTP 401)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestClassOf(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("user pressed stop"))
	cancelled := provider.Cancelled(ctx)
	tests := []struct {
		err  error
		want provider.Class
	}{
		{nil, ""},
		{cancelled, provider.ClassCancelled},
		{context.DeadlineExceeded, provider.ClassCancelled},
		{errors.Join(errors.New("x"), perr(provider.ClassAuth, 0)), provider.ClassAuth},
		{errors.New("other"), provider.ClassServer},
	}
	for _, tt := range tests {
		if got := provider.ClassOf(tt.err); got != tt.want {
			t.Errorf("ClassOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if !errors.Is(cancelled, context.Canceled) || !strings.Contains(cancelled.Error(), "user pressed stop") {
		t.Errorf("Cancelled(ctx) = %v, want it to match context.Canceled and name the cause", cancelled)
	}
	for _, c := range []provider.Class{provider.ClassRateLimit, provider.ClassServer, provider.ClassNetwork} {
		if !c.Retryable() {
			t.Errorf("%s.Retryable() = false, want true", c)
		}
	}
	for _, c := range []provider.Class{provider.ClassAuth, provider.ClassContextLength, provider.ClassInvalidRequest, provider.ClassCancelled} {
		if c.Retryable() {
			t.Errorf("%s.Retryable() = true, want false", c)
		}
	}
}
