package stdio

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

const (
	lineInit        = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	lineInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	lineList        = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

// readFirst returns a connection over input with opts, its output, and the
// first message it reads.
func readFirst(t *testing.T, input string, opts Options) (*Conn, *syncBuffer, jsonrpc.Message) {
	t.Helper()
	out := &syncBuffer{}
	c := New(strings.NewReader(input), out, opts)
	msg, err := c.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return c, out, msg
}

// TestRequestBehindInitializeWaitsForItsAnswer reproduces, deterministically,
// a client writing initialize, notifications/initialized and a request in one
// go while the initialize answer is still being produced: the request must
// not be looked at (and refused "before initialization") until that answer
// is written.
func TestRequestBehindInitializeWaitsForItsAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, out, msg := readFirst(t, lineInit+"\n"+lineInitialized+"\n"+lineList+"\n", Options{Methods: allMethods, DrainTimeout: 1})
		ctx := t.Context()
		init := msg.(*jsonrpc.Request)
		rest := make(chan []jsonrpc.Message, 1)
		go func() {
			var got []jsonrpc.Message
			for range 2 {
				m, err := c.Read(ctx)
				if err != nil {
					break
				}
				got = append(got, m)
			}
			rest <- got
		}()
		synctest.Wait() // the read loop goes as far as it can before the answer
		if lines := out.lines(); len(lines) != 0 {
			t.Fatalf("before the initialize answer the connection wrote %q", lines)
		}
		select {
		case got := <-rest:
			t.Fatalf("read %d messages behind initialize before its answer", len(got))
		default:
		}
		if err := c.Write(ctx, &jsonrpc.Response{ID: init.ID, Result: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		got := <-rest
		if len(got) != 2 {
			t.Fatalf("read %d messages behind initialize, want 2", len(got))
		}
		if r, ok := got[1].(*jsonrpc.Request); !ok || r.Method != "tools/list" {
			t.Errorf("second message = %#v, want the tools/list request", got[1])
		}
		want := []string{`{"jsonrpc":"2.0","id":1,"result":{}}`}
		if diff := cmp.Diff(want, out.lines()); diff != "" {
			t.Errorf("output (-want +got):\n%s", diff)
		}
	})
}

// heldUntilAnswer checks, inside a synctest bubble, that the next Read of
// c blocks (what names the held request) until request 1 is answered, and
// then returns the request with id want.
func heldUntilAnswer(t *testing.T, c *Conn, what string, want float64) {
	t.Helper()
	ctx := t.Context()
	next := make(chan jsonrpc.Message, 1)
	go func() {
		m, _ := c.Read(ctx)
		next <- m
	}()
	synctest.Wait()
	select {
	case m := <-next:
		t.Fatalf("%s was handed over before an answer: %#v", what, m)
	default:
	}
	if err := c.Write(ctx, &jsonrpc.Response{ID: mustID(t, float64(1)), Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if m := <-next; m == nil || m.(*jsonrpc.Request).ID != mustID(t, want) {
		t.Errorf("after an answer got %#v, want request %v", m, want)
	}
}

// TestInFlightCapStopsReading pins the request cap: with two requests in
// flight the third is held back (reading stops) until one is answered.
func TestInFlightCapStopsReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inR, inW := io.Pipe()
		var out syncBuffer
		c := New(inR, &out, Options{Methods: allMethods, MaxInFlight: 2, DrainTimeout: 1})
		ctx := t.Context()
		written := make(chan int, 8)
		go func() {
			for i := range 4 {
				id := []string{`1`, `2`, `3`, `4`}[i]
				_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`+"\n")
				written <- i
			}
			inW.Close()
		}()
		for range 2 {
			if _, err := c.Read(ctx); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		// Line 3 was read (the loop holds it) but not admitted; line 4 stays
		// in the pipe: its write cannot complete.
		if n := len(written); n != 3 {
			t.Fatalf("the client got %d lines into the pipe with 2 requests in flight, want 3", n)
		}
		heldUntilAnswer(t, c, "a third request at the request cap", float64(3))
		if len(out.lines()) != 1 {
			t.Errorf("output %q: flow control must not write errors", out.lines())
		}
		c.Abort()
		_ = c.Close()
		for range 4 - len(written) {
			<-written
		}
	})
}

// TestInFlightBytesCapStopsReading pins the byte cap: a request whose line
// would take the bytes in flight past the cap waits for an answer.
func TestInFlightBytesCapStopsReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pad := strings.Repeat("x", 100)
		line := func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"method":"ping","params":{"_meta":{"pad":"` + pad + `"}}}` + "\n"
		}
		in := strings.NewReader(line("1") + line("2"))
		var out syncBuffer
		c := New(in, &out, Options{Methods: allMethods, MaxInFlightBytes: 200, DrainTimeout: 1})
		ctx := t.Context()
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
		heldUntilAnswer(t, c, "the second request past the byte cap", float64(2))
		c.Abort()
		_ = c.Close()
	})
}

// TestErrorFramesAreBounded: no error frame echoes more than an excerpt of
// client input, whichever part of the connection writes it.
func TestErrorFramesAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		huge := strings.Repeat("é\"<", 1<<16) // multi-byte, escaped characters
		method, _ := json.Marshal(huge)
		c, out, msg := readFirst(t, `{"jsonrpc":"2.0","id":1,"method":`+string(method)+`}`+"\n"+lineInit+"\n", Options{Methods: allMethods, DrainTimeout: 1})
		ctx := t.Context()
		data, _ := json.Marshal(map[string]string{"name": huge})
		if err := c.Write(ctx, &jsonrpc.Response{ID: msg.(*jsonrpc.Request).ID, Error: &jsonrpc.Error{Code: -32602, Message: "bad name " + huge, Data: data}}); err != nil {
			t.Fatal(err)
		}
		lines := out.lines()
		if len(lines) != 2 {
			t.Fatalf("wrote %d lines, want 2", len(lines))
		}
		for _, l := range lines {
			var f struct {
				Error struct {
					Code    int64           `json:"code"`
					Message string          `json:"message"`
					Data    json.RawMessage `json:"data"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(l), &f); err != nil {
				t.Fatalf("frame is not JSON: %v", err)
			}
			msg, _ := json.Marshal(f.Error.Message)
			if n := len(msg) + len(f.Error.Data); n >= 1024 {
				t.Errorf("error message and data take %d bytes, want under 1 KiB", n)
			}
			if !utf8.ValidString(f.Error.Message) || !strings.HasSuffix(f.Error.Message, "...") {
				t.Errorf("clipped message %q: want valid UTF-8 ending in the marker", f.Error.Message)
			}
		}
	})
}
