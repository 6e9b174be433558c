package mcpserver

import (
	"fmt"
	"time"

	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/events"
)

// textFlushInterval is how often coalesced assistant-text progress is
// reported while text keeps arriving.
const textFlushInterval = time.Second

// turnProgress follows the runtime events of one turn, matched by its
// request id. It turns them into progress notifications: turn started,
// each tool call started and finished (name and outcome ok, error or
// denied; never arguments), assistant text (the one coalescing of streamed
// text: at most one notification per textFlushInterval), turn finished.
// And it hands every denied tool call to onDenied, for the audit, with or
// without a progress token, from a subscription of its own: a burst of
// text events can fill the progress subscription's buffer, never the
// audit's.
type turnProgress struct {
	sub       *events.Subscription
	denials   *events.Subscription // tool.end only
	requestID string
	sessionID string
	prog      *progress // nil: no notifications
	onDenied  func(events.ToolEndData)
	stop      chan struct{}
	done      chan struct{}

	textChars int         // assistant text so far
	unflushed bool        // text arrived since the last text notification
	flushT    *time.Timer // runs while unflushed
}

// startTurnProgress subscribes to the events of req's turn, forwards them
// to prog (which may be nil) and reports its denials to onDenied.
func startTurnProgress(bus *events.Bus, req runtime.TurnRequest, prog *progress, onDenied func(events.ToolEndData)) *turnProgress {
	// Without a progress token nothing is forwarded, so sub only keeps the
	// loop's ending (the bus closing) and takes the one event type a turn
	// publishes once; an empty filter would mean every event.
	types := []string{events.TurnEnd}
	if prog != nil {
		types = []string{events.TurnStart, events.ToolStart, events.ToolEnd, events.TextProgress, events.TurnEnd}
	}
	tp := &turnProgress{
		sub:       bus.Subscribe(types...),
		denials:   bus.Subscribe(events.ToolEnd),
		requestID: req.RequestID,
		sessionID: req.SessionID,
		prog:      prog,
		onDenied:  onDenied,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	go tp.run()
	return tp
}

func (tp *turnProgress) run() {
	defer close(tp.done)
	denials := tp.denials.C()
	for {
		var flush <-chan time.Time
		if tp.flushT != nil {
			flush = tp.flushT.C
		}
		select {
		case ev, ok := <-tp.sub.C():
			if !ok {
				tp.flushText()
				return
			}
			tp.handle(ev)
		case ev, ok := <-denials:
			if !ok {
				denials = nil // the bus closed; sub ends the loop
				continue
			}
			tp.audit(ev)
		case <-flush:
			tp.flushT = nil
			tp.flushText()
		case <-tp.stop:
			// Everything the turn published before it returned is buffered.
			for ev := range drained(tp.denials) {
				tp.audit(ev)
			}
			for ev := range drained(tp.sub) {
				tp.handle(ev)
			}
			tp.flushText()
			return
		}
	}
}

// finish forwards what the turn published before it returned, then stops.
func (tp *turnProgress) finish() {
	close(tp.stop)
	<-tp.done
	tp.sub.Close()
	tp.denials.Close()
}

// drained yields the events buffered on sub, without waiting for more.
func drained(sub *events.Subscription) func(yield func(events.Event) bool) {
	return func(yield func(events.Event) bool) {
		for {
			select {
			case ev, ok := <-sub.C():
				if !ok || !yield(ev) {
					return
				}
			default:
				return
			}
		}
	}
}

// audit hands a denied tool call of this turn to onDenied.
func (tp *turnProgress) audit(ev events.Event) {
	if d, ok := ev.Data.(events.ToolEndData); ok && d.Denied && d.RequestID == tp.requestID && ev.SessionID == tp.sessionID {
		tp.onDenied(d)
	}
}

func (tp *turnProgress) handle(ev events.Event) {
	if ev.SessionID != tp.sessionID {
		return
	}
	switch d := ev.Data.(type) {
	case events.TextData:
		if d.RequestID != tp.requestID {
			return
		}
		tp.textChars = d.Chars
		tp.unflushed = true
		if tp.flushT == nil {
			tp.flushT = time.NewTimer(textFlushInterval)
		}
	case events.TurnStartData:
		if d.RequestID == tp.requestID {
			tp.flushText()
			tp.prog.send("turn started")
		}
	case events.ToolStartData:
		if d.RequestID == tp.requestID {
			tp.flushText()
			tp.prog.send(fmt.Sprintf("tool %s started", d.Tool))
		}
	case events.ToolEndData:
		if d.RequestID != tp.requestID {
			return
		}
		tp.flushText()
		outcome := "ok"
		switch {
		case d.Denied:
			outcome = "denied"
		case d.IsError:
			outcome = "error"
		}
		tp.prog.send(fmt.Sprintf("tool %s finished: %s", d.Tool, outcome))
	case events.TurnEndData:
		if d.RequestID != tp.requestID {
			return
		}
		tp.flushText()
		switch {
		case d.Cancelled:
			tp.prog.send("turn finished: cancelled")
		case d.Failed:
			tp.prog.send("turn finished: failed")
		default:
			tp.prog.send("turn finished")
		}
	}
}

func (tp *turnProgress) flushText() {
	if tp.flushT != nil {
		tp.flushT.Stop()
		tp.flushT = nil
	}
	if !tp.unflushed {
		return
	}
	tp.unflushed = false
	tp.prog.send(fmt.Sprintf("assistant is writing (%d characters)", tp.textChars))
}
