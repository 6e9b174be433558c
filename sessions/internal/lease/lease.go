// Package lease holds what the store backends share about the turn lease.
package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// Timeout bounds the write of an acquire, and the release that undoes a
// failed one.
const Timeout = 10 * time.Second

// Acquire runs acquire, one write that takes owner's lease, so that an
// acquire that returns an error leaves no lease behind, whatever happens to
// ctx. The write does not run at all once ctx is done. Once started it is
// not interrupted by ctx (a cancelled statement may still commit on the
// server after the driver returned, too late for any release): it runs on
// a context free of ctx's cancellation, bounded by Timeout. If it failed
// (other than with sessions.ErrBusy, which writes nothing), or ctx ended
// meanwhile, release then drops owner's lease on such a context too, and
// the error (ctx's, if it ended) is returned, joined with release's own if
// that failed as well (the lease then expires after its TTL).
func Acquire(ctx context.Context, acquire, release func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fresh := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.WithoutCancel(ctx), Timeout)
	}
	actx, cancel := fresh()
	err := acquire(actx)
	cancel()
	switch {
	case errors.Is(err, sessions.ErrBusy):
		return err
	case err == nil && ctx.Err() == nil:
		return nil
	case err == nil:
		err = ctx.Err() // the caller gave up: give the lease back
	}
	rctx, cancel := fresh()
	defer cancel()
	if rerr := release(rctx); rerr != nil {
		return errors.Join(err, fmt.Errorf("release the lease the failed acquire may have taken (it expires after its ttl): %w", rerr))
	}
	return err
}
