package mcpserver

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/events"
)

// textFlushInterval is how often coalesced assistant-text progress is
// reported while text keeps arriving.
const textFlushInterval = time.Second

// turnProgress turns the runtime events of one turn into progress
// notifications: turn started, each tool call started and finished (name
// and outcome ok, error or denied; never arguments), assistant text
// (coalesced: at most one notification per textFlushInterval), turn
// finished. Events are matched to the turn by its request id; the gate's
// tool.denied events, which carry none, by session and call id.
type turnProgress struct {
	sub       *events.Subscription
	requestID string
	sessionID string
	prog      *progress
	stop      chan struct{}
	done      chan struct{}

	calls     map[string]bool // call ids of this turn's tool calls
	denied    map[string]bool // call ids the gate denied
	textChars int             // assistant text so far
	unflushed bool            // text arrived since the last text notification
	flushT    *time.Timer     // runs while unflushed
}

// startTurnProgress subscribes to the events of req's turn and forwards them
// to prog. It returns nil (which does nothing) when prog is nil.
func startTurnProgress(bus *events.Bus, req runtime.TurnRequest, prog *progress) *turnProgress {
	if prog == nil {
		return nil
	}
	tp := &turnProgress{
		sub: bus.Subscribe(events.TurnStart, events.ToolStart, events.ToolDenied, events.ToolEnd,
			events.TextProgress, events.TurnEnd),
		requestID: req.RequestID,
		sessionID: req.SessionID,
		prog:      prog,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		calls:     map[string]bool{},
		denied:    map[string]bool{},
	}
	go tp.run()
	return tp
}

func (tp *turnProgress) run() {
	defer close(tp.done)
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
		case <-flush:
			tp.flushT = nil
			tp.flushText()
		case <-tp.stop:
			// Everything the turn published before it returned is buffered.
			for {
				select {
				case ev, ok := <-tp.sub.C():
					if ok {
						tp.handle(ev)
						continue
					}
				default:
				}
				tp.flushText()
				return
			}
		}
	}
}

// finish forwards what the turn published before it returned, then stops.
func (tp *turnProgress) finish() {
	if tp == nil {
		return
	}
	close(tp.stop)
	<-tp.done
	tp.sub.Close()
}

func (tp *turnProgress) handle(ev events.Event) {
	if ev.SessionID != tp.sessionID {
		return
	}
	callID := stringData(ev, "call_id")
	if ev.Type == events.ToolDenied {
		if tp.calls[callID] {
			tp.denied[callID] = true
		}
		return
	}
	if stringData(ev, "request_id") != tp.requestID {
		return
	}
	if ev.Type == events.TextProgress {
		if n, ok := ev.Data["chars"].(int); ok {
			tp.textChars = n
		} else {
			tp.textChars += utf8.RuneCountInString(stringData(ev, "text"))
		}
		tp.unflushed = true
		if tp.flushT == nil {
			tp.flushT = time.NewTimer(textFlushInterval)
		}
		return
	}
	tp.flushText()
	switch ev.Type {
	case events.TurnStart:
		tp.prog.send("turn started")
	case events.ToolStart:
		tp.calls[callID] = true
		tp.prog.send(fmt.Sprintf("tool %s started", stringData(ev, "tool")))
	case events.ToolEnd:
		outcome := "ok"
		switch {
		case tp.denied[callID]:
			outcome = "denied"
		case boolData(ev, "is_error"):
			outcome = "error"
		}
		tp.prog.send(fmt.Sprintf("tool %s finished: %s", stringData(ev, "tool"), outcome))
	case events.TurnEnd:
		switch {
		case boolData(ev, "cancelled"):
			tp.prog.send("turn finished: cancelled")
		case boolData(ev, "failed"):
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

func stringData(ev events.Event, key string) string {
	s, _ := ev.Data[key].(string)
	return s
}

func boolData(ev events.Event, key string) bool {
	b, _ := ev.Data[key].(bool)
	return b
}
