// Package events is the runtime's in-process event bus.
//
//	bus := events.NewBus(nil)
//	sub := bus.Subscribe(events.ToolStart, events.ToolEnd)
//	defer sub.Close()
//	go func() {
//		for e := range sub.C() {
//			if d, ok := e.Data.(events.ToolStartData); ok {
//				fmt.Println(e.Type, e.SessionID, d.Tool)
//			}
//		}
//	}()
//	bus.Publish(events.Event{Type: events.ToolStart, SessionID: "s1", Data: events.ToolStartData{Tool: "read"}})
//
// Every event type has one payload type, named after it (ToolStart carries
// [ToolStartData], ...): readers switch on the type, never on string keys.
//
// Publish never blocks: each subscription has a bounded buffer, and an
// event that does not fit is dropped for that subscriber, counted
// ([Subscription.Dropped], [Bus.Dropped]) and reported through the
// optional logger at most once every 10 seconds. A slow subscriber can
// therefore miss events but can never stall a turn.
package events
