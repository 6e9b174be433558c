package stdio

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkResult encodes v the way go-sdk builds Response.Result
// (jsonrpc2.NewResponse: an encoder without HTML escaping, newline trimmed).
func sdkResult(t testing.TB, v any) json.RawMessage {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// checkEncodeLine fails t unless encodeLine(msg) is EncodeMessage's frame
// and a newline.
func checkEncodeLine(t *testing.T, msg jsonrpc.Message) {
	t.Helper()
	want, wantErr := jsonrpc.EncodeMessage(msg)
	got, err := encodeLine(msg)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("encodeLine(%+v) error %v, EncodeMessage error %v", msg, err, wantErr)
	}
	if err == nil && string(got) != string(want)+"\n" {
		t.Errorf("encodeLine(%+v)\n= %q\nwant %q", msg, got, string(want)+"\n")
	}
}

var awkwardTexts = []string{"", "ok", `{"a":"<b>&</b>"}`, "\u2028\u2029 \x00\x1f\x7f é 👋", "a\xffb", `"\`}

func TestEncodeLine(t *testing.T) {
	ids := []jsonrpc.ID{{}}
	for _, v := range []any{0.0, 1.0, -1.0, float64(maxSafeInteger), -float64(maxSafeInteger)} {
		ids = append(ids, mustID(t, v))
	}
	for _, s := range awkwardTexts {
		ids = append(ids, mustID(t, s))
	}
	var results []json.RawMessage
	for _, text := range awkwardTexts {
		results = append(results,
			sdkResult(t, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}),
			sdkResult(t, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}),
			sdkResult(t, map[string]any{"text": text, "n": math.MaxInt64, "list": []any{text, nil, 1.5}}))
	}
	results = append(results, sdkResult(t, struct{}{}), sdkResult(t, []int{}), nil, json.RawMessage{})
	for _, id := range ids {
		for _, res := range results {
			checkEncodeLine(t, &jsonrpc.Response{ID: id, Result: res})
			// Errors take the general path.
			checkEncodeLine(t, &jsonrpc.Response{ID: id, Result: res, Error: &jsonrpc.Error{Code: -32602, Message: "bad <args>"}})
		}
		checkEncodeLine(t, &jsonrpc.Response{ID: id, Error: fmt.Errorf("plain error")})
		checkEncodeLine(t, &jsonrpc.Request{ID: id, Method: "ping", Params: sdkResult(t, map[string]any{})})
	}
	checkEncodeLine(t, &jsonrpc.Request{Method: "notifications/progress", Params: sdkResult(t, map[string]any{"progress": 1})})
}

func FuzzEncodeLine(f *testing.F) {
	f.Add(int64(1), "id", "text <&> \u2028", false)
	f.Add(int64(-5), "\xff", "\x00\"\\", true)
	f.Fuzz(func(t *testing.T, n int64, sid, text string, isErr bool) {
		res := sdkResult(t, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr})
		n %= maxSafeInteger
		for _, id := range []jsonrpc.ID{mustID(t, float64(n)), mustID(t, sid), {}} {
			checkEncodeLine(t, &jsonrpc.Response{ID: id, Result: res})
		}
	})
}

// BenchmarkEncodeLine frames a sessions_list-sized result (~10 KB).
func BenchmarkEncodeLine(b *testing.B) {
	var payload strings.Builder
	payload.WriteString("[")
	for i := range 100 {
		if i > 0 {
			payload.WriteString(",")
		}
		fmt.Fprintf(&payload, `{"id":"seed_%05d","title":"Seeded session %d","updated_at":%d}`, i, i, 1767225600-i)
	}
	payload.WriteString("]")
	res := sdkResult(b, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: payload.String()}}})
	id, err := jsonrpc.MakeID(float64(12345))
	if err != nil {
		b.Fatal(err)
	}
	msg := &jsonrpc.Response{ID: id, Result: res}
	b.Run("encodeLine", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := encodeLine(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("EncodeMessage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonrpc.EncodeMessage(msg); err != nil {
				b.Fatal(err)
			}
		}
	})
}
