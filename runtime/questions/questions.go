package questions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Kind is what a question asks for.
type Kind string

// Question kinds.
const (
	KindAsk      Kind = "ask"      // free-form answer
	KindConfirm  Kind = "confirm"  // yes or no
	KindApproval Kind = "approval" // allow or deny a tool call
)

// Status is how a question ended.
type Status string

// Answer statuses.
const (
	StatusAnswered  Status = "answered"
	StatusDeclined  Status = "declined"
	StatusCancelled Status = "cancelled"
	StatusTimeout   Status = "timeout"
)

// DefaultTimeout is how long a question waits when neither the question nor
// the registry says otherwise.
const DefaultTimeout = 300 * time.Second

// Question is a question raised on a session. ID is assigned by
// [Registry.Register]; Timeout 0 means the registry's default.
type Question struct {
	ID        string
	SessionID string
	Kind      Kind
	Prompt    string
	Options   []string
	Timeout   time.Duration
	// Approval is what an approval question (KindApproval) asks to allow,
	// for whoever answers. The question.asked event never carries it.
	Approval *Approval
}

// Approval is the typed payload of an approval question: the tool call the
// answerer is asked to allow.
type Approval struct {
	// Tool is the tool's name.
	Tool string
	// Capability is the capability it needs.
	Capability string
	// CallID is the call's id.
	CallID string
	// Arguments are the call's arguments as sent: JSON text. They reach the
	// answerer only, never an event.
	Arguments string
}

// Answer is how a question was resolved. Value is set for StatusAnswered.
type Answer struct {
	Status Status
	Value  string
}

// Approved reports whether a is an answered approval or confirmation:
// Value "allow", "approve", "approved", "yes" or "y" (any case).
func (a Answer) Approved() bool {
	if a.Status != StatusAnswered {
		return false
	}
	switch lower(a.Value) {
	case "allow", "approve", "approved", "yes", "y":
		return true
	}
	return false
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Options configure a [Registry]. The zero value means defaults.
type Options struct {
	// DefaultTimeout applies to questions without their own (default
	// DefaultTimeout).
	DefaultTimeout time.Duration
}

// Registry tracks the pending questions of every session. Each question is
// resolved exactly once: by an answer, a decline, its context, its timeout
// or [Registry.CancelSession], whichever comes first. It is safe for
// concurrent use.
type Registry struct {
	timeout time.Duration

	mu      sync.Mutex
	pending map[string]*Pending
	order   []string // registration order of pending IDs
}

// New returns a registry; nil opts means defaults.
func New(opts *Options) *Registry {
	r := &Registry{timeout: DefaultTimeout, pending: map[string]*Pending{}}
	if opts != nil && opts.DefaultTimeout > 0 {
		r.timeout = opts.DefaultTimeout
	}
	return r
}

// Pending is a registered, possibly still open, question.
type Pending struct {
	reg   *Registry
	q     Question
	done  chan struct{}
	timer *time.Timer

	once   sync.Once
	answer Answer
}

// ID returns the question's ID.
func (p *Pending) ID() string { return p.q.ID }

// Question returns the question as registered (with its ID).
func (p *Pending) Question() Question { return p.q }

// Done is closed once the question is resolved.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Wait blocks until the question is resolved and returns the answer. If
// ctx ends first the question is resolved as cancelled (unless something
// else won the race) and that answer is returned.
func (p *Pending) Wait(ctx context.Context) Answer {
	select {
	case <-p.done:
	case <-ctx.Done():
		p.reg.resolve(p, Answer{Status: StatusCancelled})
		<-p.done
	}
	return p.answer
}

// Register opens q and returns its handle; the question times out after
// q.Timeout (or the registry default). It tells nobody: the caller
// reports question.asked if anyone is to hear of it (runtime/gate does, to
// the turn's observer). An unknown kind or an empty session ID is an
// error.
func (r *Registry) Register(q Question) (*Pending, error) {
	switch q.Kind {
	case KindAsk, KindConfirm, KindApproval:
	default:
		return nil, fmt.Errorf("register question: unknown kind %q; use ask, confirm or approval", q.Kind)
	}
	if q.SessionID == "" {
		return nil, errors.New("register question: session id is empty; questions belong to a session")
	}
	q.ID = newID()
	q.Options = slices.Clone(q.Options)
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = r.timeout
	}
	q.Timeout = timeout
	p := &Pending{reg: r, q: q, done: make(chan struct{})}
	r.mu.Lock()
	r.pending[q.ID] = p
	r.order = append(r.order, q.ID)
	p.timer = time.AfterFunc(timeout, func() { r.resolve(p, Answer{Status: StatusTimeout}) })
	r.mu.Unlock()
	return p, nil
}

// Ask registers q and waits for its answer (see [Pending.Wait]).
func (r *Registry) Ask(ctx context.Context, q Question) (Answer, error) {
	p, err := r.Register(q)
	if err != nil {
		return Answer{}, err
	}
	return p.Wait(ctx), nil
}

// Resolve resolves the pending question id with a. It returns false when
// no such question is pending (unknown, or already resolved: claim-once).
// A Status of "" means StatusAnswered.
func (r *Registry) Resolve(id string, a Answer) bool {
	if a.Status == "" {
		a.Status = StatusAnswered
	}
	r.mu.Lock()
	p := r.pending[id]
	r.mu.Unlock()
	if p == nil {
		return false
	}
	return r.resolve(p, a)
}

// resolve settles p with a unless it is settled already.
func (r *Registry) resolve(p *Pending, a Answer) bool {
	won := false
	p.once.Do(func() {
		won = true
		r.mu.Lock()
		delete(r.pending, p.q.ID)
		if i := slices.Index(r.order, p.q.ID); i >= 0 {
			r.order = slices.Delete(r.order, i, i+1)
		}
		r.mu.Unlock()
		p.timer.Stop()
		if a.Status != StatusAnswered {
			a.Value = ""
		}
		p.answer = a
		close(p.done)
	})
	return won
}

// CancelSession resolves every pending question of sessionID as declined
// and returns how many it resolved. Other sessions are untouched.
func (r *Registry) CancelSession(sessionID string) int {
	var ps []*Pending
	r.mu.Lock()
	for _, id := range r.order {
		if p := r.pending[id]; p.q.SessionID == sessionID {
			ps = append(ps, p)
		}
	}
	r.mu.Unlock()
	n := 0
	for _, p := range ps {
		if r.resolve(p, Answer{Status: StatusDeclined}) {
			n++
		}
	}
	return n
}

// Pending returns the open questions of sessionID in registration order.
func (r *Registry) Pending(sessionID string) []Question {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Question
	for _, id := range r.order {
		if p := r.pending[id]; p.q.SessionID == sessionID {
			q := p.q
			q.Options = slices.Clone(q.Options)
			out = append(out, q)
		}
	}
	return out
}

// Get returns the open question id.
func (r *Registry) Get(id string) (Question, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pending[id]
	if p == nil {
		return Question{}, false
	}
	q := p.q
	q.Options = slices.Clone(q.Options)
	return q, true
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "q_" + hex.EncodeToString(b[:])
}
