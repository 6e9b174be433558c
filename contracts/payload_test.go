package contracts_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
)

// payloadCases holds every payload type of the contract with awkward
// contents, and the exact wire text each must encode to.
var payloadCases = []struct {
	name string
	v    any
	wire string
}{
	{"sessions", []contracts.SessionSummary{
		{ID: "mcp_0123456789abcdef0123456789abcdef", Title: "Grüße <b>&</b> 👋", UpdatedAt: 1700000000},
		{ID: "s2", Title: "", UpdatedAt: math.MaxInt64},
	}, `[{"id":"mcp_0123456789abcdef0123456789abcdef","title":"Grüße <b>&</b> 👋","updated_at":1700000000},` +
		`{"id":"s2","title":"","updated_at":9223372036854775807}]`},
	{"no sessions", []contracts.SessionSummary{}, `[]`},
	{"nil sessions", []contracts.SessionSummary(nil), `[]`},
	{"messages", []contracts.Message{
		{ID: "m1", Role: "user", Content: "line1\nline2\t\"quoted\" \\ \u2028\u2029 \x01", Timestamp: 1},
		{ID: "m2", Role: "assistant", Content: "日本語", Timestamp: -1},
	}, `[{"content":"line1\nline2\t\"quoted\" \\ ` + "\u2028\u2029" + ` \u0001","id":"m1","role":"user","timestamp":1},` +
		`{"content":"日本語","id":"m2","role":"assistant","timestamp":-1}]`},
	{"prompt send", contracts.PromptSendResult{SessionID: "s", Text: "ok", AssistantMsgID: "m", Failed: true},
		`{"assistant_msg_id":"m","failed":true,"session_id":"s","text":"ok"}`},
	{"prompt send zero", contracts.PromptSendResult{}, `{"assistant_msg_id":"","failed":false,"session_id":"","text":""}`},
	{"prompt cancel", contracts.PromptCancelResult{SessionID: "s", Cancelled: true}, `{"cancelled":true,"session_id":"s"}`},
	{"runtime tools", []contracts.RuntimeTool{{
		Name: "memory_search", Description: "Search <memory>.",
		InputSchema: json.RawMessage(`{"type":"object", "properties":{"query":{"type":"string"}},"required":["query"]}`),
	}}, `[{"description":"Search <memory>.","inputSchema":{"properties":{"query":{"type":"string"}},"required":["query"],"type":"object"},"name":"memory_search"}]`},
	{"error", contracts.ErrorPayload{Error: contracts.TextSessionNotFound}, `{"error":"session not found"}`},
	{"error with reason", contracts.ErrorPayload{Error: contracts.TextPromptExecutionFailed, Reason: "session_busy"},
		`{"error":"prompt execution failed","reason":"session_busy"}`},
}

// TestPayloadRoundTrip sends every payload through the whole wire path:
// TextResult, the JSON-RPC result encoding, go-sdk's decoding, DecodePayload.
func TestPayloadRoundTrip(t *testing.T) {
	for _, tt := range payloadCases {
		t.Run(tt.name, func(t *testing.T) {
			text, err := contracts.EncodePayload(tt.v)
			if err != nil {
				t.Fatalf("EncodePayload: %v", err)
			}
			if text != tt.wire {
				t.Errorf("EncodePayload = %s\nwant           %s", text, tt.wire)
			}

			res, err := contracts.TextResult(tt.v)
			if err != nil {
				t.Fatalf("TextResult: %v", err)
			}
			frame, err := json.Marshal(res)
			if err != nil {
				t.Fatalf("marshal result: %v", err)
			}
			var back mcp.CallToolResult
			if err := json.Unmarshal(frame, &back); err != nil {
				t.Fatalf("unmarshal result %s: %v", frame, err)
			}
			if back.IsError || len(back.Content) != 1 {
				t.Fatalf("result = %s, want one text content and no isError", frame)
			}
			tc, ok := back.Content[0].(*mcp.TextContent)
			if !ok {
				t.Fatalf("content is %T, want *mcp.TextContent", back.Content[0])
			}
			if tc.Text != tt.wire {
				t.Errorf("text after the wire = %s\nwant                   %s", tc.Text, tt.wire)
			}

			got := reflect.New(reflect.TypeOf(tt.v))
			if err := contracts.DecodePayload(tc.Text, got.Interface()); err != nil {
				t.Fatalf("DecodePayload: %v", err)
			}
			want := tt.v
			if rv := reflect.ValueOf(want); rv.Kind() == reflect.Slice && rv.IsNil() {
				want = reflect.MakeSlice(rv.Type(), 0, 0).Interface() // nil travels as []
			}
			if rt, ok := want.([]contracts.RuntimeTool); ok {
				// The schema comes back canonical, compare it as JSON.
				for i := range rt {
					gotTool := got.Elem().Index(i).Interface().(contracts.RuntimeTool)
					if diff := cmp.Diff(decodeAny(t, rt[i].InputSchema), decodeAny(t, gotTool.InputSchema)); diff != "" {
						t.Errorf("tool %d schema mismatch (-want +got):\n%s", i, diff)
					}
				}
				return
			}
			if diff := cmp.Diff(want, got.Elem().Interface()); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func decodeAny(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

func TestErrorResult(t *testing.T) {
	res := contracts.ErrorResult(contracts.ErrorPayload{Error: contracts.TextSessionDataUnavailable})
	frame, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"content":[{"type":"text","text":"{\"error\":\"session data unavailable\"}"}],"isError":true}`
	if string(frame) != want {
		t.Errorf("ErrorResult wire = %s\nwant               %s", frame, want)
	}
}

func TestTextResultWire(t *testing.T) {
	res, err := contracts.TextResult(contracts.PromptCancelResult{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	frame, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"content":[{"type":"text","text":"{\"cancelled\":false,\"session_id\":\"s\"}"}]}`
	if string(frame) != want {
		t.Errorf("TextResult wire = %s\nwant              %s", frame, want)
	}
}

func TestEncodePayloadCanonical(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"nested keys sorted", map[string]any{"b": map[string]any{"z": 1, "a": []any{map[string]any{"y": 1, "x": 2}}}, "a": nil},
			`{"a":null,"b":{"a":[{"x":2,"y":1}],"z":1}}`},
		{"keys sorted by code point", map[string]int{"é": 1, "z": 2, "Z": 3, "": 4}, `{"":4,"Z":3,"z":2,"é":1}`},
		{"no HTML escaping", "<a href=\"x\">&amp;</a>", `"<a href=\"x\">&amp;</a>"`},
		{"UTF-8 kept", "ü 👋 \u2028", "\"ü 👋 \u2028\""},
		{"controls escaped", "\x00\x1f\x7f\b\f", `"\u0000\u001f` + "\x7f" + `\b\f"`},
		{"invalid UTF-8 replaced", "a\xffb", "\"a\ufffdb\""},
		{"floats", []float64{0.1, 1e21, -0}, `[0.1,1e+21,0]`},
		{"raw message canonicalised", json.RawMessage(` { "b" : 1 , "a" : "\u00e9" } `), `{"a":"é","b":1}`},
		{"nil", nil, `null`},
	}
	for _, tt := range tests {
		got, err := contracts.EncodePayload(tt.v)
		if err != nil {
			t.Errorf("%s: EncodePayload(%#v) error: %v", tt.name, tt.v, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%s: EncodePayload(%#v) = %s, want %s", tt.name, tt.v, got, tt.want)
		}
	}
}

func TestEncodePayloadErrors(t *testing.T) {
	for _, v := range []any{make(chan int), math.NaN(), map[string]any{"f": func() {}}} {
		if got, err := contracts.EncodePayload(v); err == nil {
			t.Errorf("EncodePayload(%T) = %q, want an error", v, got)
		}
		if _, err := contracts.TextResult(v); err == nil {
			t.Errorf("TextResult(%T) succeeded, want an error", v)
		}
	}
}

func TestDecodePayload(t *testing.T) {
	var p contracts.PromptSendResult
	if err := contracts.DecodePayload(`{"session_id":"s","text":"t","assistant_msg_id":"m","failed":true,"new_field":1}`, &p); err != nil {
		t.Fatalf("DecodePayload with an unknown field: %v", err)
	}
	if diff := cmp.Diff(contracts.PromptSendResult{SessionID: "s", Text: "t", AssistantMsgID: "m", Failed: true}, p); diff != "" {
		t.Errorf("DecodePayload mismatch (-want +got):\n%s", diff)
	}
	for _, text := range []string{``, `{`, `[]`, `{"failed":"yes"}`, `{} {}`} {
		var p contracts.PromptSendResult
		if err := contracts.DecodePayload(text, &p); err == nil {
			t.Errorf("DecodePayload(%q) succeeded, want an error", text)
		}
	}
}

// The fixed texts are part of the wire contract: pin them.
func TestFixedTexts(t *testing.T) {
	got := []string{
		contracts.TextSessionNotFound, contracts.TextSessionDataUnavailable, contracts.TextPromptExecutionFailed,
		contracts.TextInvalidPromptSession, contracts.TextRuntimeToolNotFound, contracts.TextInvalidRuntimeToolArguments,
		contracts.TextDeniedHardConstraint, contracts.TextDeniedCapabilityPrefix + "fs.read", contracts.TextDeniedPermissionRule,
		contracts.TextDeniedApprovalUnavailable, contracts.TextRuntimeToolFailed, contracts.TextToolExecutionFailed,
		contracts.TextRequestCancelled, contracts.TextAuditUnavailable,
	}
	want := []string{
		"session not found", "session data unavailable", "prompt execution failed",
		"invalid MCP prompt session", "runtime tool not exposed; tools_list lists the exposed ones", "invalid underlying Runtime tool arguments",
		"[denied] hard constraint", "[denied] authority tier does not allow fs.read", "[denied] blocked by permission rule",
		"[denied] approval unavailable for non-interactive MCP", "Runtime tool execution failed", "MCP tool execution failed",
		"Request cancelled", "[refused] audit log unavailable",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fixed texts mismatch (-want +got):\n%s", diff)
	}
}
