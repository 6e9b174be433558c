package runtime

import (
	"context"
	"errors"
	"sync"
)

// Commit is the commit point of one turn: the one place where a cancel
// and the turn's final write meet. Both go through a single mutex-guarded
// claim, so exactly one of them wins:
//
//   - a [Commit.Cancel] that wins stops the turn, and nothing of the turn's
//     result (tool, tool-result or assistant messages, head move) is ever
//     written; ProcessUserTurn returns an error wrapping the cause;
//   - a final write that wins has claimed the commit point: every later
//     Cancel reports false, the write runs to its end unaffected by any
//     cancellation, and ProcessUserTurn returns its outcome.
//
// A turn that ends without reaching its commit point (an error before its
// final write) also makes every later Cancel report false. Make one with
// [NewCommit], pass it in [TurnRequest.Commit], and keep it to cancel the
// turn; a Commit serves one turn.
type Commit struct {
	mu     sync.Mutex
	state  commitState
	cause  error
	cancel context.CancelCauseFunc // the running turn's, once bound
	done   chan struct{}           // closed when a Cancel wins
	// durable, if set, is taken first by the claim (NewDurableCommit).
	durable func() error
}

type commitState uint8

const (
	commitOpen      commitState = iota // not started, or running
	commitCancelled                    // a Cancel won
	commitClaimed                      // the final write won
	commitEnded                        // the turn ended before its commit point
)

// errCommitReused is returned when a Commit is given to a second turn.
var errCommitReused = errors.New("the turn's Commit already served another turn; make one per turn with NewCommit")

// NewCommit returns the commit point of a turn not yet started.
func NewCommit() *Commit {
	return &Commit{done: make(chan struct{})}
}

// NewDurableCommit returns the commit point of a turn whose claim must
// first take a commit point outside this process: claim runs once, under
// the Commit's mutex, when the turn claims (so no local Cancel can race
// it), and only if no Cancel won before. A nil error lets the final write
// happen; an error refuses the claim and ends the turn as cancelled with
// that error as its cause (ProcessUserTurn's error wraps it, Err returns
// it, Done is closed), writing nothing of its result. A durable task's
// runner passes the store's compare-and-set (sessions.TaskStore.CommitTask)
// here, so that a cancel recorded in the store by another process and the
// turn's final write cannot both win. claim must not call the Commit.
func NewDurableCommit(claim func() error) *Commit {
	return &Commit{done: make(chan struct{}), durable: claim}
}

// Cancel stops the turn with cause (nil means context.Canceled) unless it
// already claimed its commit point or ended. It reports whether this call
// won: true means nothing of the turn's result will ever be written, false
// means the turn committed (or is committing), ended, or was already
// cancelled. A Cancel before the turn starts wins, and the turn then never
// takes the session's lease.
func (c *Commit) Cancel(cause error) bool {
	if cause == nil {
		cause = context.Canceled
	}
	c.mu.Lock()
	if c.state != commitOpen {
		c.mu.Unlock()
		return false
	}
	c.cancelLocked(cause)
	return true
}

// cancelLocked ends the open Commit as cancelled with cause: it is called
// with c.mu held, releases it, then cancels the bound turn, if any.
func (c *Commit) cancelLocked(cause error) {
	c.state, c.cause = commitCancelled, cause
	close(c.done)
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// Done is closed once a Cancel has won.
func (c *Commit) Done() <-chan struct{} { return c.done }

// Err is the cause given to the Cancel that won, or nil while none has.
func (c *Commit) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == commitCancelled {
		return c.cause
	}
	return nil
}

// bind attaches the running turn's cancel function. It fails when a Cancel
// already won (the error is its cause) or the Commit served another turn.
func (c *Commit) bind(cancel context.CancelCauseFunc) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.state == commitCancelled:
		return c.cause
	case c.state != commitOpen || c.cancel != nil:
		return errCommitReused
	}
	c.cancel = cancel
	return nil
}

// Claim is the turn's side of the commit point, taken right before its
// final write: it reports whether the write may happen, and from a true
// answer on every Cancel loses. It reports false once a Cancel won or the
// turn ended. ProcessUserTurn claims by itself; only another runner of
// turns (a test double of ProcessUserTurn) calls Claim.
//
// With a durable claim ([NewDurableCommit]) the claim first takes it: a
// refusal reports false and ends the turn as a winning Cancel with the
// refusal as its cause would.
func (c *Commit) Claim() bool {
	c.mu.Lock()
	if c.state != commitOpen {
		c.mu.Unlock()
		return false
	}
	if c.durable != nil {
		if err := c.durable(); err != nil {
			c.cancelLocked(err)
			return false
		}
	}
	c.state = commitClaimed
	c.mu.Unlock()
	return true
}

// claim is Claim for the running turn. The end of caller (ProcessUserTurn's
// ctx) counts as a Cancel, even before the watch that relays it has run;
// the end of turn (the turn's own context) for another reason, a lost
// lease, refuses the claim without being a cancel.
func (c *Commit) claim(caller, turn context.Context) bool {
	if caller.Err() != nil {
		c.Cancel(context.Cause(caller))
		return false
	}
	if turn.Err() != nil {
		return false
	}
	return c.Claim()
}

// settle ends the race for a turn that is returning, and returns the
// winning Cancel's cause, or nil. A turn neither a Cancel nor its claim won
// is marked cancelled if caller (ProcessUserTurn's ctx) has ended, since
// that is what stopped it, and ended otherwise; either way no later Cancel
// can report that it stopped anything.
func (c *Commit) settle(caller context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == commitOpen {
		if caller.Err() == nil {
			c.state = commitEnded
			return nil
		}
		c.state, c.cause = commitCancelled, context.Cause(caller)
		close(c.done)
	}
	if c.state == commitCancelled {
		return c.cause
	}
	return nil
}
