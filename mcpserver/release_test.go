package mcpserver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
)

// TestToolCallReleasesArguments: once validated, a tools/call's raw
// arguments are dropped from go-sdk's request, and the handler takes the
// typed arguments out of the request's context (takeArgs), so that
// neither of these copies of a maximal argument (16 MiB) stays reachable
// while the runtime tool runs. (Over stdio the connection's own record of
// the request still holds the raw params until the answer is written; this
// test builds the request without one.)
func TestToolCallReleasesArguments(t *testing.T) {
	e, err := newEnv(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newConnection(e.srv)
	if err != nil {
		t.Fatal(err)
	}
	close(c.startAudited)
	call := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
		Name:      contracts.ToolCall,
		Arguments: json.RawMessage(`{"name":"memory_update","arguments":{"path":"p","content":"x"}}`),
	}}
	ran := false
	next := func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		ran = true
		if call.Params.Arguments != nil {
			t.Errorf("the handler's request still holds the raw arguments %s", call.Params.Arguments)
		}
		a, err := takeArgs[contracts.ToolCallArgs](ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := contracts.ToolCallArgs{Name: "memory_update", Arguments: map[string]any{"path": "p", "content": "x"}}
		if diff := cmp.Diff(want, a); diff != "" {
			t.Errorf("takeArgs (-want +got):\n%s", diff)
		}
		if h := ctx.Value(argsKey{}).(*heldArgs); h.args != nil {
			t.Errorf("the request's context still holds the arguments %v after takeArgs", h.args)
		}
		return &mcp.CallToolResult{}, nil
	}
	if _, err := c.middleware(next)(context.Background(), "tools/call", call); err != nil {
		t.Fatal(err)
	}
	if !ran {
		t.Fatal("the middleware did not call the handler")
	}
}
