package contracts

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

// awkwardStrings are strings whose JSON encodings differ between encoders:
// HTML characters, U+2028/U+2029, controls, DEL, invalid UTF-8, quotes.
var awkwardStrings = []string{
	"", "plain", "Grüße <b>&</b> 👋", "line1\nline2\t\"quoted\" \\ \u2028\u2029 \x01",
	"\x00\x1f\x7f\b\f\r", "a\xffb", "\xe2\x80", "\xed\xa0\x80", "日本語", strings.Repeat("é\"", 40),
}

// fastPathCases builds one value of every type the fast path knows, and
// slices of them, from the given field values.
func fastPathCases(s1, s2, s3, s4 string, n int64, flag bool, schema json.RawMessage) []any {
	ss := SessionSummary{ID: s1, Title: s2, UpdatedAt: n}
	m := Message{ID: s1, Role: s2, Content: s3, Timestamp: n}
	rt := RuntimeTool{Name: s1, Description: s4, InputSchema: schema}
	return []any{
		ss, []SessionSummary{ss, {ID: s3, Title: s4, UpdatedAt: -n}}, []SessionSummary{}, []SessionSummary(nil),
		m, []Message{m, {Content: s4}}, []Message{}, []Message(nil),
		PromptSendResult{SessionID: s1, Text: s2, AssistantMsgID: s3, Failed: flag},
		PromptCancelResult{SessionID: s4, Cancelled: flag},
		ErrorPayload{Error: s1, Reason: s2}, ErrorPayload{Error: s3},
		rt, []RuntimeTool{rt, {Name: s2, InputSchema: json.RawMessage(`{}`)}}, []RuntimeTool{}, []RuntimeTool(nil),
	}
}

// checkFastPath fails t unless the fast path handles v and agrees with the
// generic path: the same text, or both an error.
func checkFastPath(t *testing.T, v any) {
	t.Helper()
	b, ok, fastErr := appendKnown(nil, v)
	if !ok {
		t.Fatalf("appendKnown(%T) did not handle it", v)
	}
	want, genErr := encodeGeneric(v)
	switch {
	case (fastErr != nil) != (genErr != nil):
		t.Errorf("%#v:\nfast path error %v\ngeneric error   %v", v, fastErr, genErr)
	case fastErr == nil && string(b) != want:
		t.Errorf("%#v:\nfast path %s\ngeneric   %s", v, b, want)
	}
	got, err := EncodePayload(v)
	if (err != nil) != (genErr != nil) || err == nil && got != want {
		t.Errorf("EncodePayload(%#v) = %q, %v; want %q, %v", v, got, err, want, genErr)
	}
}

var schemaCases = []json.RawMessage{
	nil,
	json.RawMessage(`{"type":"object", "properties":{"query":{"type":"string"}},"required":["query"]}`),
	json.RawMessage(" {\"z\":1.0,\"a\":[1e400,-0,\"<\\u2028>\"],\"\u00e9\":{\"y\":null,\"x\":true}} \n"),
	json.RawMessage(`"\ud800"`), json.RawMessage("\"\xff\""), json.RawMessage(`null`),
	// Not one JSON value: both paths fail.
	{}, json.RawMessage(`{`), json.RawMessage(`{} {}`), json.RawMessage(`nul`),
}

// TestEncodePayloadFastPath holds the typed fast path of EncodePayload to
// the generic path byte for byte.
func TestEncodePayloadFastPath(t *testing.T) {
	for i, s := range awkwardStrings {
		next := awkwardStrings[(i+1)%len(awkwardStrings)]
		for _, n := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64} {
			for _, schema := range schemaCases {
				for _, v := range fastPathCases(s, next, s+next, next+s, n, n%2 == 0, schema) {
					checkFastPath(t, v)
				}
			}
		}
	}
}

func TestEncodePayloadUnknownType(t *testing.T) {
	for _, v := range []any{nil, "x", map[string]int{"b": 1, "a": 2}, &SessionSummary{}, []*Message{{}}} {
		if _, ok, _ := appendKnown(nil, v); ok {
			t.Errorf("appendKnown(%T) handled it; only the contract's payload types take the fast path", v)
		}
	}
}

func FuzzEncodePayloadFastPath(f *testing.F) {
	f.Add("id", "Grüße <b>&</b>", "\u2028\x01\"", "a\xffb", int64(-1), true, []byte(`{"b":1,"a":[2.0]}`))
	f.Add("", "", "", "", int64(math.MaxInt64), false, []byte(`{`))
	f.Fuzz(func(t *testing.T, s1, s2, s3, s4 string, n int64, flag bool, schema []byte) {
		for _, v := range fastPathCases(s1, s2, s3, s4, n, flag, schema) {
			checkFastPath(t, v)
		}
	})
}

// sessionsPayload is what sessions_list encodes: 100 summaries.
func sessionsPayload() []SessionSummary {
	out := make([]SessionSummary, 100)
	for i := range out {
		out[i] = SessionSummary{ID: fmt.Sprintf("mcp_%032x", i), Title: fmt.Sprintf("Seeded session %d", i), UpdatedAt: 1767225600 - int64(i)}
	}
	return out
}

func BenchmarkEncodePayload(b *testing.B) {
	tools := []RuntimeTool{{Name: "read", Description: "Read a file.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer"}},"required":["path"]}`)}}
	for _, bc := range []struct {
		name string
		v    any
	}{
		{"sessions100", sessionsPayload()},
		{"prompt-send", PromptSendResult{SessionID: "mcp_0123456789abcdef0123456789abcdef", Text: "Hello, world.", AssistantMsgID: "m1"}},
		{"tools1", tools},
	} {
		b.Run(bc.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EncodePayload(bc.v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/generic", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeGeneric(bc.v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
