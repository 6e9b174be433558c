package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/tool"
)

func TestToMCPContent(t *testing.T) {
	good := []tool.Content{tool.Text("hi"), tool.Image([]byte{1, 2}, "image/png"), tool.Image([]byte{3}, "image/svg+xml")}
	got, err := toMCPContent(good)
	if err != nil {
		t.Fatal(err)
	}
	want := []mcp.Content{
		&mcp.TextContent{Text: "hi"},
		&mcp.ImageContent{Data: []byte{1, 2}, MIMEType: "image/png"},
		&mcp.ImageContent{Data: []byte{3}, MIMEType: "image/svg+xml"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("toMCPContent (-want +got):\n%s", diff)
	}
	for _, bad := range [][]tool.Content{
		{tool.Image([]byte{1}, "text/plain")},
		{tool.Image([]byte{1}, "image/")},
		{tool.Image([]byte{1}, "image/png; charset=x")},
		{tool.Image([]byte{1}, "image/p ng")},
		{tool.Image([]byte{1}, "image/pñg")},
		{tool.Image(nil, "image/png")},
		{{Type: "audio", Data: []byte{1}, MediaType: "audio/wav"}},
		{{Type: "", Text: "untyped"}},
	} {
		if got, err := toMCPContent(bad); err == nil {
			t.Errorf("toMCPContent(%+v) = %v, want an error", bad, got)
		}
	}
}

func TestDeniedText(t *testing.T) {
	for _, tt := range []struct {
		d    authz.Decision
		want string
	}{
		{authz.Decision{ReasonCode: authz.ReasonHardConstraint, Capability: authz.CapProcessExec}, contracts.TextDeniedHardConstraint},
		{authz.Decision{ReasonCode: authz.ReasonCapability, Capability: authz.CapFSRead}, "[denied] authority tier does not allow fs.read"},
		{authz.Decision{ReasonCode: authz.ReasonRuleDeny}, contracts.TextDeniedPermissionRule},
		{authz.Decision{ReasonCode: authz.ReasonApprovalUnavailable}, contracts.TextDeniedApprovalUnavailable},
		{authz.Decision{ReasonCode: authz.ReasonApprovalRequired}, contracts.TextDeniedApprovalUnavailable},
		{authz.Decision{ReasonCode: "APPROVAL_DENIED"}, contracts.TextDeniedApprovalUnavailable},
	} {
		if got := deniedText(tt.d); got != tt.want {
			t.Errorf("deniedText(%s) = %q, want %q", tt.d.ReasonCode, got, tt.want)
		}
	}
}

func TestResolveExposed(t *testing.T) {
	reg := tool.NewRegistry()
	for _, ft := range []*fakeTool{
		{name: "memory_search", cap: authz.CapMemoryRead},
		{name: "memory_update", cap: authz.CapMemorySourceAppend},
		{name: "read", cap: authz.CapFSRead},
		// Declares a paired capability, but the contract table maps the name
		// to process.exec: hidden, as the gate would deny it.
		{name: "sneaky", cap: authz.CapMemoryRead},
	} {
		if err := reg.Register(ft); err != nil {
			t.Fatal(err)
		}
	}
	got := ResolveExposed(reg, []string{"memory_update", "read", "nope", "sneaky", "memory_search", "memory_update"})
	type row struct{ name, hidden string }
	var rows []row
	for _, e := range got {
		if (e.Tool == nil) != (e.Name == "nope") {
			t.Errorf("%s: Tool = %v", e.Name, e.Tool)
		}
		rows = append(rows, row{e.Name, e.Hidden})
	}
	want := []row{
		{"memory_update", ""},
		{"read", "needs fs.read, which the paired tier of MCP clients does not hold"},
		{"nope", "not a registered runtime tool"},
		{"sneaky", "needs process.exec, which the paired tier of MCP clients does not hold"},
		{"memory_search", ""},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("ResolveExposed =\n%v\nwant\n%v", rows, want)
	}
}

// echoEnv exposes one runtime tool, memory_status, that records the raw
// arguments it ran with and returns result.
func echoEnv(got *string, schema string, result tool.Result) func(*envConfig) {
	return func(o *envConfig) {
		reg := tool.NewRegistry()
		echo := &fakeTool{name: "memory_status", cap: authz.CapMemoryRead, schema: schema,
			run: func(_ context.Context, args json.RawMessage, _ func(string)) (tool.Result, error) {
				*got = string(args)
				return result, nil
			}}
		if err := reg.Register(echo); err != nil {
			panic(err)
		}
		o.Runtime = runtime.New(runtime.Options{Store: o.Store, Registry: reg, Questions: o.Runtime.Questions()})
		o.ExposedTools = []string{"memory_status"}
	}
}

// tool_call arguments reach the runtime tool exactly as the client sent
// and the schema validated them: big integers keep every digit, and a
// number beyond float64 (1e400) arrives as written, neither an execution
// error nor -32602.
func TestToolCallArgumentsArriveExactly(t *testing.T) {
	const schema = `{"type":"object","properties":{"n":{"type":"number"}},"additionalProperties":false}`
	for _, lit := range []string{"12345678901234567890", "1e400", "0.1000000000000000000001"} {
		t.Run(lit, func(t *testing.T) {
			var got string
			session(t, echoEnv(&got, schema, tool.TextResult("ok")), func(t *testing.T, e *env, s *stepper) {
				s.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":"memory_status","arguments":{"n":` + lit + `}}}}`)
				frames := s.frames()
				text, isErr := resultText(t, frames)
				if isErr || text != "ok" {
					t.Fatalf("tool_call = %q (isError %v), want ok", text, isErr)
				}
				var v struct{ N json.RawMessage }
				if err := json.Unmarshal([]byte(got), &v); err != nil || string(v.N) != lit {
					t.Errorf("runtime tool got arguments %s, want n = %s exactly", got, lit)
				}
			})
		})
	}
}

// A runtime tool's text over the result cap is clipped on a UTF-8
// boundary around a visible marker; an image over the image cap is an
// execution error, never a text.
func TestToolCallResultCaps(t *testing.T) {
	const schema = `{"type":"object"}`
	var got string
	big := strings.Repeat("€", tool.DefaultMaxResultBytes/3+1000) // 3 bytes each
	session(t, echoEnv(&got, schema, tool.TextResult(big)), func(t *testing.T, e *env, s *stepper) {
		text, isErr := resultText(t, s.call(1, contracts.ToolCall, map[string]any{"name": "memory_status"}))
		if isErr || !utf8.ValidString(text) || !strings.Contains(text, "bytes truncated") || len(text) > tool.DefaultMaxResultBytes+100 {
			t.Errorf("tool_call of %d bytes of text = %d bytes (valid UTF-8 %v, isError %v), want at most the cap, valid, with a marker",
				len(big), len(text), utf8.ValidString(text), isErr)
		}
	})
	huge := tool.Result{Content: []tool.Content{tool.Image(make([]byte, tool.DefaultMaxImageBytes+1), "image/png")}}
	session(t, echoEnv(&got, schema, huge), func(t *testing.T, e *env, s *stepper) {
		text, isErr := resultText(t, s.call(1, contracts.ToolCall, map[string]any{"name": "memory_status"}))
		if !isErr || text != contracts.TextRuntimeToolFailed {
			t.Errorf("tool_call of an image over the cap = %q (isError %v), want the runtime tool failure", text, isErr)
		}
	})
}
