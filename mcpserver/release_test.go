package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
)

// TestToolCallReleasesArguments: once validated, a tools/call's raw
// arguments are dropped from go-sdk's request, and a tool_call's runtime
// arguments are taken out of the validated value by toolCallArgs, so that
// neither of these copies of a maximal argument (16 MiB) stays reachable
// while the runtime tool runs. (Over stdio the connection's own record of
// the request still holds the raw params until the answer is written; this
// test builds the request without one.)
func TestToolCallReleasesArguments(t *testing.T) {
	c := newConnection(&Server{log: slog.New(slog.DiscardHandler)})
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
		a, err := toolCallArgs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := contracts.ToolCallArgs{Name: "memory_update", Arguments: map[string]any{"path": "p", "content": "x"}}
		if diff := cmp.Diff(want, a); diff != "" {
			t.Errorf("toolCallArgs (-want +got):\n%s", diff)
		}
		if v, ok := ctx.Value(argsKey{}).(map[string]any)["arguments"]; ok {
			t.Errorf("the validated value still holds the runtime arguments %v after toolCallArgs", v)
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
