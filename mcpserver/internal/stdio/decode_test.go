package stdio

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestCheckDecodesAsGoSDK holds check's single decoding of a request to
// what jsonrpc.DecodeMessage makes of the same line: same id, method and
// params, byte for byte.
func TestCheckDecodesAsGoSDK(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping","params":{}}`,
		`{ "params" : { "a" : [1, {"b": null}, "x\"}"] } , "method" : "ping", "id" : "s-4", "jsonrpc" : "2.0" }`,
		`{"jsonrpc":"2.0","id":-5,"method":"ping","params":{"_meta":{"progressToken":"t"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":null}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"r"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		// Escaped names, repeated members (the last counts), strings
		// holding braces and quotes, whitespace everywhere.
		`{"jsonrpc":"2.0","id":7,"m\u0065thod":"ping","p\u0061rams":{"a":"\\\"{["}}`,
		`{"jsonrpc":"2.0","id":8,"method":"x","method":"ping","params":{"a":1},"params" :	{"b":[2, {}]} }`,
		"{\r\n\"jsonrpc\" : \"2.0\" ,\n \"id\" : 9 , \"method\" : \"ping\" , \"params\" : { } \n}",
	}
	for _, line := range lines {
		c := New(strings.NewReader(""), &syncBuffer{}, Options{Methods: allMethods})
		got := c.check([]byte(line), false)
		want, err := jsonrpc.DecodeMessage([]byte(line))
		if err != nil {
			t.Fatalf("DecodeMessage(%s): %v", line, err)
		}
		g, ok := got.(*jsonrpc.Request)
		if !ok {
			t.Fatalf("check(%s) = %T, want a request", line, got)
		}
		w := want.(*jsonrpc.Request)
		type view struct {
			ID     any
			Method string
			Params string
			Nil    bool
		}
		gv := view{g.ID.Raw(), g.Method, string(g.Params), g.Params == nil}
		wv := view{w.ID.Raw(), w.Method, string(w.Params), w.Params == nil}
		if diff := cmp.Diff(wv, gv); diff != "" {
			t.Errorf("check(%s) differs from DecodeMessage (-want +got):\n%s", line, diff)
		}
	}
}

// TestCheckDepth: a request nested deeper than go-sdk decodes is answered
// -32600 by the connection, as before, and one at the limit is passed on.
func TestCheckDepth(t *testing.T) {
	nested := func(depth int) string { // depth counts the top-level object
		inner := strings.Repeat(`[`, depth-2) + strings.Repeat(`]`, depth-2)
		return `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"[{\"","b":` + inner + `}}`
	}
	for _, tc := range []struct {
		depth int
		pass  bool
	}{{maxDepth, true}, {maxDepth + 1, false}} {
		line := nested(tc.depth)
		_, decodeErr := jsonrpc.DecodeMessage([]byte(line))
		if (decodeErr == nil) != tc.pass {
			t.Fatalf("depth %d: DecodeMessage error = %v; the test's idea of the limit is wrong", tc.depth, decodeErr)
		}
		out := &syncBuffer{}
		c := New(strings.NewReader(""), out, Options{Methods: allMethods})
		got := c.check([]byte(line), false)
		if (got != nil) != tc.pass {
			t.Errorf("depth %d: check passed it on = %v, want %v (wrote %q)", tc.depth, got != nil, tc.pass, out.lines())
		}
		if !tc.pass && !bytes.Contains([]byte(strings.Join(out.lines(), "")), []byte(`"code":-32600`)) {
			t.Errorf("depth %d: answer %q, want -32600", tc.depth, out.lines())
		}
	}
}

// TestReadLineReusesItsBuffer: lines of a maximal size cost one buffer,
// not a new one per line.
func TestReadLineReusesItsBuffer(t *testing.T) {
	const n = 1 << 20
	line := strings.Repeat("x", n) + "\n"
	c := New(strings.NewReader(line+line+line), &syncBuffer{}, Options{MaxLineLength: n})
	br := newLineReader(c)
	first, _, err := c.readLine(br)
	if err != nil || len(first) != n {
		t.Fatalf("readLine = %d bytes, %v; want %d", len(first), err, n)
	}
	allocs := testing.AllocsPerRun(1, func() {
		if l, _, err := c.readLine(br); err != nil || len(l) != n {
			t.Fatalf("readLine = %d bytes, %v; want %d", len(l), err, n)
		}
	})
	if allocs > 1 {
		t.Errorf("readLine of a second %d-byte line allocated %v times, want it to reuse the first's buffer", n, allocs)
	}
}

// BenchmarkCheckMaximalLine: check on a maximal tools/call line, most of it
// one string (a memory_update's content).
func BenchmarkCheckMaximalLine(b *testing.B) {
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":"memory_update","arguments":{"path":"p","content":"`
	const tail = `"}}}}`
	line := []byte(head + strings.Repeat("a", DefaultMaxLineLength-len(head)-len(tail)) + tail)
	c := New(strings.NewReader(""), &syncBuffer{}, Options{Methods: allMethods})
	c.initialized = true
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		req, ok := c.check(line, false).(*jsonrpc.Request)
		if !ok {
			b.Fatal("check passed on no request")
		}
		c.mu.Lock()
		delete(c.inflight, req.ID)
		c.held = 0
		c.mu.Unlock()
	}
}
