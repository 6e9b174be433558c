package provider

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds the retries of [WithRetry]. Zero fields take the
// defaults of [DefaultRetryPolicy].
type RetryPolicy struct {
	// MaxAttempts is the total number of attempts, the first included.
	// Zero means 4; 1 disables retrying.
	MaxAttempts int
	// BaseDelay is the backoff before the first retry; it doubles for each
	// later one. Zero means 500ms.
	BaseDelay time.Duration
	// MaxDelay caps one backoff wait. Zero means 20s.
	MaxDelay time.Duration
	// MaxRetryAfter is the longest server-requested wait (Retry-After) that is
	// honoured; when the server asks for longer, the error is returned at
	// once instead. Zero means 60s.
	MaxRetryAfter time.Duration
	// OnRetry, when not nil, is called before each wait with the attempt
	// that failed (1-based), its error and the wait.
	OnRetry func(attempt int, err error, wait time.Duration)
}

// DefaultRetryPolicy returns the policy the runtime uses: 4 attempts,
// exponential backoff from 500ms capped at 20s with jitter, Retry-After
// honoured up to 60s.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 4, BaseDelay: 500 * time.Millisecond, MaxDelay: 20 * time.Second, MaxRetryAfter: 60 * time.Second}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = d.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = d.MaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = d.MaxRetryAfter
	}
	return p
}

// backoff returns the wait before retry number n (1-based): the doubled base
// delay, capped, with the upper half jittered so that processes sharing an
// endpoint do not retry in lockstep.
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	half := d / 2
	return half + rand.N(half+1)
}

// WithRetry returns a Provider that retries p's failures where retrying can
// help: rate limits (waiting as long as the server asked, within
// MaxRetryAfter), server errors and network errors; an error that is not an
// [*Error] is returned as it is. An attempt that already
// delivered text through onDelta is never retried, so the caller never sees a
// fragment twice. Waits end early, with a [ClassCancelled] error, when ctx
// ends; a wait that would outlast ctx's deadline is not started, and the
// error is returned at once.
func WithRetry(p Provider, policy RetryPolicy) Provider {
	return &retrying{inner: p, policy: policy.withDefaults()}
}

type retrying struct {
	inner  Provider
	policy RetryPolicy
}

func (r *retrying) Name() string { return r.inner.Name() }

func (r *retrying) Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error) {
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return Response{}, Cancelled(ctx)
		}
		delivered := false
		resp, err := r.inner.Stream(ctx, req, func(d Delta) {
			delivered = true
			if onDelta != nil {
				onDelta(d)
			}
		})
		if err == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return Response{}, Cancelled(ctx)
		}
		pe, ok := errors.AsType[*Error](err)
		if !ok || !pe.Class.Retryable() || delivered || attempt >= r.policy.MaxAttempts {
			return resp, err
		}
		wait := r.policy.backoff(attempt)
		if pe.RetryAfter > 0 {
			if pe.RetryAfter > r.policy.MaxRetryAfter {
				return resp, err
			}
			wait = pe.RetryAfter
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
			// The wait would outlast the caller's deadline (the turn
			// timeout): the retry could never run.
			return resp, err
		}
		if r.policy.OnRetry != nil {
			r.policy.OnRetry(attempt, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Response{}, Cancelled(ctx)
		case <-t.C:
		}
	}
}
