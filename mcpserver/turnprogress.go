package mcpserver

import (
	"fmt"
	"time"

	"github.com/openprogram/openprogram/runtime/events"
)

// textFlushInterval is how often coalesced assistant-text progress is
// reported while text keeps arriving.
const textFlushInterval = time.Second

// progressBuffer is how many events of a turn wait for a slow client before
// the newest are dropped: the turn never waits for the wire.
const progressBuffer = 256

// turnProgress turns the events of one turn (its observer) into progress
// notifications: turn started, each tool call started and finished (name
// and outcome ok, error or denied; never arguments), assistant text (the
// one coalescing of streamed text: at most one notification per
// textFlushInterval), turn finished. It writes from a goroutine of its
// own, so a client slow to read never slows the turn: what does not fit
// its buffer is dropped. Without a progress token it does nothing.
type turnProgress struct {
	prog *progress // nil: no notifications
	ch   chan events.Event
	stop chan struct{}
	done chan struct{}

	textChars int         // assistant text so far
	unflushed bool        // text arrived since the last text notification
	flushT    *time.Timer // runs while unflushed
}

// startTurnProgress starts forwarding to prog (which may be nil).
func startTurnProgress(prog *progress) *turnProgress {
	tp := &turnProgress{prog: prog}
	if prog == nil {
		return tp
	}
	tp.ch = make(chan events.Event, progressBuffer)
	tp.stop, tp.done = make(chan struct{}), make(chan struct{})
	go tp.run()
	return tp
}

// observe is the turn's observer: it hands e over without waiting.
func (tp *turnProgress) observe(e events.Event) {
	if tp.prog == nil {
		return
	}
	select {
	case tp.ch <- e:
	default: // the client is behind: a later notification says as much
	}
}

func (tp *turnProgress) run() {
	defer close(tp.done)
	for {
		var flush <-chan time.Time
		if tp.flushT != nil {
			flush = tp.flushT.C
		}
		select {
		case ev := <-tp.ch:
			tp.handle(ev)
		case <-flush:
			tp.flushT = nil
			tp.flushText()
		case <-tp.stop:
			// Everything the turn reported before it returned is buffered.
			for drained := false; !drained; {
				select {
				case ev := <-tp.ch:
					tp.handle(ev)
				default:
					drained = true
				}
			}
			tp.flushText()
			if tp.flushT != nil {
				tp.flushT.Stop()
			}
			return
		}
	}
}

// finish forwards what the turn reported before it returned, then stops;
// after a cancel (cancelled) nothing more of the turn is sent.
func (tp *turnProgress) finish(cancelled bool) {
	if tp.prog == nil {
		return
	}
	if cancelled {
		tp.prog.close()
	}
	close(tp.stop)
	<-tp.done
	tp.prog.close()
}

func (tp *turnProgress) handle(ev events.Event) {
	switch d := ev.Data.(type) {
	case events.TextData:
		tp.textChars = d.Chars
		tp.unflushed = true
		if tp.flushT == nil {
			tp.flushT = time.NewTimer(textFlushInterval)
		}
	case events.TurnStartData:
		tp.flushText()
		tp.prog.send("turn started")
	case events.ToolStartData:
		tp.flushText()
		tp.prog.send(fmt.Sprintf("tool %s started", d.Tool))
	case events.ToolEndData:
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
