package stdio

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDetach: a member named by Options.Detach is cut out of the params
// go-sdk decodes and kept on the Request; the rest of the params, and the
// params as they arrived, are unchanged.
func TestDetach(t *testing.T) {
	for _, tc := range []struct{ params, rest, detached string }{
		{`{"name":"t","arguments":{"a":[1,"}"],"b":{"arguments":0}}}`, `{"name":"t"}`, `{"a":[1,"}"],"b":{"arguments":0}}`},
		{`{ "arguments" : "x\"y" , "name" : "t" , "_meta" : {"progressToken":1} }`, `{"name" : "t","_meta" : {"progressToken":1}}`, `"x\"y"`},
		{`{"name":"t"}`, `{"name":"t"}`, ``},
		{`{}`, `{}`, ``},
		// An escaped name is the same name, and of two the last counts, as
		// when the params are decoded.
		{`{"argu\u006dents":1,"name":"t","arguments":2}`, `{"name":"t"}`, `2`},
		{`{"arguments":null}`, `{}`, `null`},
		{`{"arguments":-1.5e3,"name":"t"}`, `{"name":"t"}`, `-1.5e3`},
		{`null`, `null`, ``},
	} {
		c := New(strings.NewReader(""), &syncBuffer{}, Options{Methods: []string{"tools/call"}, Detach: map[string]string{"tools/call": "arguments"}})
		c.initialized = true
		line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tc.params + `}`
		got, ok := c.check([]byte(line), false).(*jsonrpc.Request)
		if !ok {
			t.Fatalf("check(%s) passed on no request", line)
		}
		r := RequestOf(&mcp.CallToolRequest{Extra: got.Extra.(*mcp.RequestExtra)})
		if r == nil {
			t.Fatalf("check(%s): no Request", line)
		}
		type view struct{ Rest, Detached, Params string }
		want := view{tc.rest, tc.detached, tc.params}
		if diff := cmp.Diff(want, view{string(got.Params), string(r.Detached()), string(r.Params())}); diff != "" {
			t.Errorf("check(%s) (-want +got):\n%s", line, diff)
		}
		if !json.Valid(got.Params) {
			t.Errorf("check(%s): params %s are not JSON", line, got.Params)
		}
	}
}
