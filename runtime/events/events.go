package events

import (
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Event types published by the runtime, each with its payload type.
const (
	TurnStart        = "turn.start"        // TurnStartData
	TurnEnd          = "turn.end"          // TurnEndData
	ToolStart        = "tool.start"        // ToolStartData
	ToolEnd          = "tool.end"          // ToolEndData
	TextProgress     = "turn.text"         // TextData
	QuestionAsked    = "question.asked"    // QuestionData
	QuestionResolved = "question.resolved" // QuestionData (with Status)
	// StandingApproval: a standing approval ("allow for this session")
	// allowed a call without a question. Published by whoever answers the
	// gate's StandingFunc (runtime/gate; cli/host does), so a console can say why the
	// call ran.
	StandingApproval = "approval.standing" // StandingData
)

// Event is one thing that happened. Data is the payload struct of Type
// (a value, shared by every subscriber that receives the event).
type Event struct {
	Type      string
	SessionID string
	Time      time.Time
	Data      any
}

// TurnStartData is the payload of [TurnStart].
type TurnStartData struct {
	RequestID string // the turn's request id (runtime.TurnRequest.RequestID)
	SessionID string
}

// TurnEndData is the payload of [TurnEnd].
type TurnEndData struct {
	RequestID  string
	SessionID  string
	Failed     bool   // the turn stored a failure text instead of a model answer
	ErrorClass string // why, when Failed
	Cancelled  bool   // the turn was stopped before its final write
}

// The lengths, in bytes, the model-supplied tool name and call id are
// clipped to (contracts/clip) in [ToolStartData] and [ToolEndData].
const (
	MaxToolLen   = 64
	MaxCallIDLen = 128
)

// ToolStartData is the payload of [ToolStart]. Tool and CallID are clipped
// (they come from the model; see [MaxToolLen]); arguments are never carried.
type ToolStartData struct {
	RequestID string // "" for a call outside a turn
	CallID    string
	Tool      string
}

// ToolEndData is the payload of [ToolEnd]: how the call ended. Denied
// reports a gate denial (then ReasonCode and Capability say which); the
// result's text is never carried.
type ToolEndData struct {
	RequestID  string
	CallID     string
	Tool       string
	IsError    bool
	Denied     bool
	ReasonCode string
	Capability string
}

// TextData is the payload of [TextProgress]: one fragment of streamed
// assistant text and the number of characters streamed in the turn so far.
type TextData struct {
	RequestID string
	Text      string
	Chars     int
}

// QuestionData is the payload of [QuestionAsked] and [QuestionResolved].
type QuestionData struct {
	QuestionID string
	Kind       string
	SessionID  string
	Status     string // QuestionResolved only
}

// StandingData is the payload of [StandingApproval]. Tool and CallID are
// clipped like [ToolStartData]'s; arguments are never carried.
type StandingData struct {
	CallID string
	Tool   string
}

// DefaultBuffer is the per-subscription buffer when BusOptions.Buffer is 0.
const DefaultBuffer = 256

// dropLogInterval rate-limits the drop warning.
const dropLogInterval = 10 * time.Second

// BusOptions configure a [Bus]. The zero value means defaults.
type BusOptions struct {
	// Buffer is each subscription's channel capacity (default DefaultBuffer).
	Buffer int
	// Logger receives drop warnings, at most one per 10 s (nil: discard).
	Logger *slog.Logger
}

// Bus is an in-process publish/subscribe hub. Publish never blocks: an
// event that does not fit a subscriber's buffer is dropped for that
// subscriber and counted. It is safe for concurrent use.
type Bus struct {
	buffer  int
	log     *slog.Logger
	mu      sync.RWMutex
	subs    []*Subscription
	closed  bool
	dropped atomic.Uint64
	lastLog atomic.Int64 // unix nanos of the last drop warning
}

// NewBus returns a bus; nil opts means defaults.
func NewBus(opts *BusOptions) *Bus {
	b := &Bus{buffer: DefaultBuffer}
	if opts != nil {
		if opts.Buffer > 0 {
			b.buffer = opts.Buffer
		}
		b.log = opts.Logger
	}
	if b.log == nil {
		b.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return b
}

// Subscription receives the events matching its filter on C until it is
// closed.
type Subscription struct {
	bus     *Bus
	filter  []string
	ch      chan Event
	mu      sync.Mutex // guards closed and sends on ch
	closed  bool
	dropped atomic.Uint64
}

// Subscribe returns a subscription to the events whose Type is one of
// filter, or to every event when filter is empty. On a closed bus the
// subscription is already closed.
func (b *Bus) Subscribe(filter ...string) *Subscription {
	s := &Subscription{bus: b, filter: slices.Clone(filter), ch: make(chan Event, b.buffer)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		s.closed = true
		close(s.ch)
		return s
	}
	b.subs = append(b.subs, s)
	return s
}

// C returns the channel events arrive on. It is closed by Close.
func (s *Subscription) C() <-chan Event { return s.ch }

// Dropped returns how many events this subscription missed because its
// buffer was full.
func (s *Subscription) Dropped() uint64 { return s.dropped.Load() }

// Close unsubscribes and closes C. It is idempotent; events already
// buffered stay readable.
func (s *Subscription) Close() {
	b := s.bus
	b.mu.Lock()
	if i := slices.Index(b.subs, s); i >= 0 {
		b.subs = slices.Delete(b.subs, i, i+1)
	}
	b.mu.Unlock()
	s.shut()
}

// Unsubscribe is s.Close for a subscription of b; it is idempotent and
// ignores a nil or foreign subscription.
func (b *Bus) Unsubscribe(s *Subscription) {
	if s == nil || s.bus != b {
		return
	}
	s.Close()
}

func (s *Subscription) shut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

func (s *Subscription) matches(typ string) bool {
	return len(s.filter) == 0 || slices.Contains(s.filter, typ)
}

// deliver sends e without blocking and reports whether it was buffered.
func (s *Subscription) deliver(e Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return true
	}
	select {
	case s.ch <- e:
		return true
	default:
		s.dropped.Add(1)
		return false
	}
}

// Publish delivers e to every matching subscription without blocking.
// A zero Time is set to now. Publishing on a closed or nil bus does
// nothing.
func (b *Bus) Publish(e Event) {
	if b == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for _, s := range b.subs {
		if !s.matches(e.Type) {
			continue
		}
		if !s.deliver(e) {
			b.noteDrop(e.Type)
		}
	}
}

func (b *Bus) noteDrop(typ string) {
	total := b.dropped.Add(1)
	now := time.Now().UnixNano()
	last := b.lastLog.Load()
	if (last == 0 || now-last >= int64(dropLogInterval)) && b.lastLog.CompareAndSwap(last, now) {
		b.log.Warn("event bus dropped events for a slow subscriber", "type", typ, "dropped_total", total)
	}
}

// Dropped returns how many deliveries were dropped on this bus in total.
func (b *Bus) Dropped() uint64 { return b.dropped.Load() }

// Close closes every subscription; later Publish calls do nothing and
// later subscriptions start closed. It is idempotent.
func (b *Bus) Close() {
	b.mu.Lock()
	subs := b.subs
	b.subs = nil
	b.closed = true
	b.mu.Unlock()
	for _, s := range subs {
		s.shut()
	}
}
