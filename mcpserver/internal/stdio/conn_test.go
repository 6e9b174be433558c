package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a goroutine-safe output sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimSuffix(b.buf.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

var allMethods = []string{"initialize", "ping", "tools/list", "tools/call"}

// readAll reads messages until EOF.
func readAll(t *testing.T, c *Conn) []jsonrpc.Message {
	t.Helper()
	var out []jsonrpc.Message
	for {
		msg, err := c.Read(t.Context())
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, msg)
	}
}

func TestOverlongLinesAreRefusedAndReadingGoesOn(t *testing.T) {
	in := strings.NewReader(strings.Repeat("x", 100) + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\r\n" +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`) // last line unterminated
	var out syncBuffer
	// The pings stay unanswered: a drain timeout of 1ns ends reading at EOF.
	c := New(in, &out, Options{Methods: allMethods, MaxLineLength: 64, DrainTimeout: time.Nanosecond})
	msgs := readAll(t, c)
	if len(msgs) != 2 {
		t.Fatalf("read %d messages, want 2", len(msgs))
	}
	want := []string{`{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request: line longer than 64 bytes"}}`}
	if diff := cmp.Diff(want, out.lines()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	for i, m := range msgs {
		if r, ok := m.(*jsonrpc.Request); !ok || r.Method != "ping" {
			t.Errorf("message %d = %#v, want ping", i, m)
		}
	}
}

func TestResponsesOfCancelledRequestsAreReplaced(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	var out syncBuffer
	c := New(inR, &out, Options{Methods: allMethods})
	ctx := t.Context()
	// Lines are sent one at a time, after the previous one was read, as a
	// client that waits for the initialize response would.
	var reqs []*jsonrpc.Request
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}`,
	} {
		go func() { _, _ = io.WriteString(inW, line+"\n") }()
		msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req := msg.(*jsonrpc.Request)
		reqs = append(reqs, req)
		if req.Method == "initialize" {
			if err := c.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := RequestOf(&mcp.CallToolRequest{Extra: reqs[1].Extra.(*mcp.RequestExtra)})
	b := RequestOf(&mcp.CallToolRequest{Extra: reqs[2].Extra.(*mcp.RequestExtra)})
	if a == nil || b == nil {
		t.Fatal("RequestOf found no request record")
	}
	if !a.CancelledByPeer() || b.CancelledByPeer() {
		t.Errorf("CancelledByPeer: a=%v b=%v, want true false", a.CancelledByPeer(), b.CancelledByPeer())
	}
	b.SetError(&jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "runtime tool not exposed; tools_list lists the exposed ones"})
	if got := c.InFlight(); !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("InFlight = %v, want [a b]", got)
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: a.ID(), Result: json.RawMessage(`{"content":[]}`)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: b.ID(), Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: `method not found: "tools/call"`}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Answered():
	default:
		t.Error("Answered not closed after the response was written")
	}
	want := []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":"a","error":{"code":0,"message":"Request cancelled"}}`,
		`{"jsonrpc":"2.0","id":"b","error":{"code":-32601,"message":"runtime tool not exposed; tools_list lists the exposed ones"}}`,
	}
	if diff := cmp.Diff(want, out.lines()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

func TestFailedInitializeKeepsTheGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inR, inW := io.Pipe()
		var out syncBuffer
		c := New(inR, &out, Options{Methods: allMethods})
		ctx := t.Context()
		send := func(s string) {
			go func() { _, _ = io.WriteString(inW, s+"\n") }()
			synctest.Wait()
		}
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
		msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(ctx, &jsonrpc.Response{ID: msg.(*jsonrpc.Request).ID, Error: &jsonrpc.Error{Code: -32602, Message: "bad"}}); err != nil {
			t.Fatal(err)
		}
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		send(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}`)
		msg, err = c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := msg.(*jsonrpc.Request); r.Method != "initialize" {
			t.Errorf("read %q, want the second initialize", r.Method)
		}
		want := []string{
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`,
			`{"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"invalid request: \"tools/list\" before initialization"}}`,
		}
		if diff := cmp.Diff(want, out.lines()); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
		inW.Close()
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

func TestDrainWaitsForResponsesThenTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" +
				`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
		var out syncBuffer
		drained := 0
		c := New(in, &out, Options{Methods: allMethods, DrainTimeout: 2 * time.Second, OnDrainTimeout: func() { drained++ }})
		ctx := t.Context()
		var ids []jsonrpc.ID
		for range 2 {
			msg, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, msg.(*jsonrpc.Request).ID)
		}
		// Request 1 is answered during the drain, request 2 never is.
		go func() {
			time.Sleep(time.Second)
			_ = c.Write(ctx, &jsonrpc.Response{ID: ids[0], Result: json.RawMessage(`{}`)})
		}()
		start := time.Now()
		if _, err := c.Read(ctx); !errors.Is(err, io.EOF) {
			t.Fatalf("Read after input end = %v, want EOF", err)
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Errorf("drain took %v, want the 2s timeout", d)
		}
		if drained != 1 {
			t.Errorf("OnDrainTimeout called %d times, want 1", drained)
		}
		if err := c.Write(ctx, &jsonrpc.Response{ID: ids[1], Result: json.RawMessage(`{}`)}); err != nil {
			t.Errorf("Write after the drain = %v, want nil (dropped)", err)
		}
		if diff := cmp.Diff([]string{`{"jsonrpc":"2.0","id":1,"result":{}}`}, out.lines()); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
		if _, err := c.Read(ctx); !errors.Is(err, io.EOF) {
			t.Errorf("second Read after EOF = %v, want EOF", err)
		}
	})
}

func TestDrainWithNothingInFlightIsImmediate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(strings.NewReader(""), io.Discard, Options{Methods: allMethods})
		start := time.Now()
		if _, err := c.Read(t.Context()); !errors.Is(err, io.EOF) {
			t.Fatalf("Read = %v, want EOF", err)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("EOF took %v, want no wait", d)
		}
	})
}

func TestAbortUnblocksRead(t *testing.T) {
	inR, inW := io.Pipe()
	c := New(inR, io.Discard, Options{Methods: allMethods})
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(context.Background())
		done <- err
	}()
	c.Abort()
	if err := <-done; !errors.Is(err, io.EOF) {
		t.Errorf("Read after Abort = %v, want EOF", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	inW.Close()
}

func TestWriteFailureIsReported(t *testing.T) {
	c := New(strings.NewReader(""), failingWriter{}, Options{})
	err := c.Write(t.Context(), &jsonrpc.Response{ID: mustID(t, "x"), Result: json.RawMessage(`{}`)})
	if err == nil || !strings.Contains(err.Error(), "write to stdout") {
		t.Errorf("Write = %v, want a write error", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestRequestOfForeignRequests(t *testing.T) {
	if RequestOf(nil) != nil {
		t.Error("RequestOf(nil) != nil")
	}
	if RequestOf(&mcp.CallToolRequest{}) != nil {
		t.Error("RequestOf(request without extra) != nil")
	}
}

func TestIDString(t *testing.T) {
	for v, want := range map[any]string{"abc": "abc", float64(42): "42", float64(-7): "-7"} {
		if got := IDString(mustID(t, v)); got != want {
			t.Errorf("IDString(%v) = %q, want %q", v, got, want)
		}
	}
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
