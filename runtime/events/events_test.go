package events_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/runtime/events"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func drain(s *events.Subscription) []string {
	var got []string
	for {
		select {
		case e, ok := <-s.C():
			if !ok {
				return got
			}
			got = append(got, e.Type)
		default:
			return got
		}
	}
}

func TestSubscribeFilter(t *testing.T) {
	b := events.NewBus(nil)
	all := b.Subscribe()
	tools := b.Subscribe(events.ToolStart, events.ToolEnd)
	defer all.Close()
	defer tools.Close()
	for _, typ := range []string{events.TurnStart, events.ToolStart, events.ToolEnd, events.TurnEnd} {
		b.Publish(events.Event{Type: typ, SessionID: "s"})
	}
	if diff := cmp.Diff([]string{events.TurnStart, events.ToolStart, events.ToolEnd, events.TurnEnd}, drain(all)); diff != "" {
		t.Errorf("unfiltered subscription (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{events.ToolStart, events.ToolEnd}, drain(tools)); diff != "" {
		t.Errorf("filtered subscription (-want +got):\n%s", diff)
	}
}

func TestPublishSetsTime(t *testing.T) {
	b := events.NewBus(nil)
	s := b.Subscribe()
	defer s.Close()
	before := time.Now()
	b.Publish(events.Event{Type: events.TurnStart})
	fixed := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	b.Publish(events.Event{Type: events.TurnEnd, Time: fixed})
	e := <-s.C()
	if e.Time.Before(before) {
		t.Errorf("Time = %v, want set to now", e.Time)
	}
	if e := <-s.C(); !e.Time.Equal(fixed) {
		t.Errorf("Time = %v, want the given %v", e.Time, fixed)
	}
}

func TestSlowSubscriberNeverBlocksAndDropsAreCounted(t *testing.T) {
	var logBuf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logBuf.Write(p)
	}), nil))
	b := events.NewBus(&events.BusOptions{Buffer: 4, Logger: logger})
	slow := b.Subscribe()
	fast := b.Subscribe()
	defer slow.Close()
	defer fast.Close()

	received := make(chan int)
	go func() {
		n := 0
		for range fast.C() {
			n++
		}
		received <- n
	}()
	done := make(chan struct{})
	go func() {
		for range 100 {
			b.Publish(events.Event{Type: events.TextProgress})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish blocked on a subscriber that never reads")
	}
	if got := slow.Dropped(); got != 96 {
		t.Errorf("slow.Dropped() = %d, want 96 (100 published, buffer 4)", got)
	}
	if got := len(drain(slow)); got != 4 {
		t.Errorf("slow subscriber buffered %d events, want 4", got)
	}
	fast.Close()
	n := <-received
	if total := b.Dropped(); total != slow.Dropped()+fast.Dropped() {
		t.Errorf("bus Dropped() = %d, want the sum of subscriptions %d", total, slow.Dropped()+fast.Dropped())
	}
	if n+int(fast.Dropped()) != 100 {
		t.Errorf("fast subscriber: received %d + dropped %d, want 100", n, fast.Dropped())
	}
	mu.Lock()
	logged := logBuf.String()
	mu.Unlock()
	if c := strings.Count(logged, "dropped events"); c != 1 {
		t.Errorf("drop warning logged %d times, want once (rate-limited): %s", c, logged)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestCloseIsIdempotentAndStopsDelivery(t *testing.T) {
	b := events.NewBus(nil)
	s := b.Subscribe()
	b.Publish(events.Event{Type: events.TurnStart})
	b.Unsubscribe(s)
	s.Close()
	b.Unsubscribe(s)
	b.Unsubscribe(nil)
	events.NewBus(nil).Unsubscribe(b.Subscribe()) // foreign: ignored
	b.Publish(events.Event{Type: events.TurnEnd})
	var got []string
	for e := range s.C() {
		got = append(got, e.Type)
	}
	if diff := cmp.Diff([]string{events.TurnStart}, got); diff != "" {
		t.Errorf("after Close (-want +got):\n%s", diff)
	}
}

func TestBusClose(t *testing.T) {
	b := events.NewBus(nil)
	s := b.Subscribe()
	b.Close()
	b.Close()
	if _, ok := <-s.C(); ok {
		t.Errorf("subscription open after bus Close")
	}
	s.Close() // still safe
	late := b.Subscribe()
	if _, ok := <-late.C(); ok {
		t.Errorf("subscription on a closed bus is open")
	}
	b.Publish(events.Event{Type: events.TurnStart}) // no panic
	var nilBus *events.Bus
	nilBus.Publish(events.Event{Type: events.TurnStart})
}

func TestConcurrentPublishSubscribeClose(t *testing.T) {
	b := events.NewBus(&events.BusOptions{Buffer: 8})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				b.Publish(events.Event{Type: events.ToolStart})
			}
		})
		wg.Go(func() {
			for range 50 {
				s := b.Subscribe(events.ToolStart)
				drain(s)
				s.Close()
			}
		})
	}
	wg.Wait()
	b.Close()
}
