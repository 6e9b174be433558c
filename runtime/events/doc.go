// Package events names what a turn reports as it runs, each event type with
// one payload type named after it (ToolStart carries [ToolStartData], ...):
// readers switch on the type, never on string keys.
//
// A turn's events go to the [Observer] of that turn alone
// (runtime.TurnRequest.Observe), in order, on the turn's goroutine: no
// process-wide bus, no filtering by request id. No event holds user text,
// tool arguments or a tool's result; assistant text arrives as [TextData].
//
//	req.Observe = func(e events.Event) {
//		if d, ok := e.Data.(events.ToolStartData); ok {
//			fmt.Println(e.Type, e.SessionID, d.Tool)
//		}
//	}
package events
