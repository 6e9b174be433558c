package events_test

import (
	"testing"
	"time"

	"github.com/openprogram/openprogram/runtime/events"
)

func TestObserverEmit(t *testing.T) {
	var got []events.Event
	o := events.Observer(func(e events.Event) { got = append(got, e) })
	before := time.Now()
	o.Emit(events.ToolStart, "s1", events.ToolStartData{Tool: "read"})
	if len(got) != 1 {
		t.Fatalf("Emit delivered %d events, want 1", len(got))
	}
	e := got[0]
	if e.Type != events.ToolStart || e.SessionID != "s1" || e.Data != (events.ToolStartData{Tool: "read"}) {
		t.Errorf("Emit delivered %+v", e)
	}
	if e.Time.Before(before) || e.Time.After(time.Now()) {
		t.Errorf("Emit stamped %v, want the time of the call", e.Time)
	}
	// A nil observer observes nothing and does not panic.
	var none events.Observer
	none.Emit(events.TurnEnd, "s1", events.TurnEndData{})
}
