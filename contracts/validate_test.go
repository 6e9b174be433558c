package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/openprogram/openprogram/internal/canonjson"
	"github.com/openprogram/openprogram/internal/schema"
)

// validateCases is the error matrix of docs/contract.md section 4 for the wrapper
// arguments; it also seeds FuzzValidate. want is the returned map as JSON
// (numbers are json.Number, compared as written); err the -32602 message, or "" for success.
var validateCases = []struct {
	name, tool, args string
	nilArgs          bool
	want             string
	code             int64
	err              string
}{
	// Unknown wrapper tools: -32601, whatever the arguments.
	{name: "unknown tool", tool: "session_delete", args: `{}`, code: -32601},
	{name: "empty tool name", tool: "", args: `{}`, code: -32601},
	{name: "tool names are case-sensitive", tool: "Sessions_List", args: `{}`, code: -32601},
	{name: "unknown tool with invalid JSON", tool: "nope", args: `{`, code: -32601},

	// Tools without inputs.
	{name: "no args", tool: SessionsList, nilArgs: true, want: `{}`},
	{name: "empty args", tool: SessionsList, args: ``, want: `{}`},
	{name: "null args mean missing", tool: SessionsList, args: `null`, want: `{}`},
	{name: "null args with spaces", tool: ToolsList, args: " null\n", want: `{}`},
	{name: "empty object", tool: ToolsList, args: `{}`, want: `{}`},
	{name: "extra property", tool: SessionsList, args: `{"limit":5}`, code: -32602, err: "invalid arguments at $.limit: additionalProperties"},
	{name: "array", tool: SessionsList, args: `[]`, code: -32602, err: "invalid arguments at $: type"},
	{name: "string", tool: ToolsList, args: `"{}"`, code: -32602, err: "invalid arguments at $: type"},
	{name: "number", tool: ToolsList, args: `1`, code: -32602, err: "invalid arguments at $: type"},
	{name: "boolean", tool: ToolsList, args: `true`, code: -32602, err: "invalid arguments at $: type"},
	{name: "not JSON", tool: SessionsList, args: `{`, code: -32602, err: "invalid arguments at $: type"},
	{name: "trailing comma", tool: SessionsList, args: `{"a":1,}`, code: -32602, err: "invalid arguments at $: type"},
	{name: "two values", tool: SessionsList, args: `{} {}`, code: -32602, err: "invalid arguments at $: type"},
	{name: "only spaces", tool: SessionsList, args: `  `, code: -32602, err: "invalid arguments at $: type"},

	// Required non-blank strings.
	{name: "session_get ok", tool: SessionGet, args: `{"session_id":"mcp_1"}`, want: `{"session_id":"mcp_1"}`},
	{name: "session_get keeps spaces", tool: SessionGet, args: `{"session_id":" a "}`, want: `{"session_id":" a "}`},
	{name: "session_get missing", tool: SessionGet, args: `{}`, code: -32602, err: "invalid arguments at $.session_id: required"},
	{name: "session_get no args", tool: SessionGet, nilArgs: true, code: -32602, err: "invalid arguments at $.session_id: required"},
	{name: "session_get null args", tool: SessionGet, args: `null`, code: -32602, err: "invalid arguments at $.session_id: required"},
	{name: "session_get empty", tool: SessionGet, args: `{"session_id":""}`, code: -32602, err: "invalid arguments at $.session_id: minLength"},
	{name: "session_get blank", tool: SessionGet, args: `{"session_id":"   "}`, code: -32602, err: "invalid arguments at $.session_id: pattern"},
	{name: "session_get tabs and newlines", tool: SessionGet, args: `{"session_id":"\t\r\n\f"}`, code: -32602, err: "invalid arguments at $.session_id: pattern"},
	{name: "session_get vertical tab", tool: SessionGet, args: `{"session_id":"\u000b"}`, code: -32602, err: "invalid arguments at $.session_id: pattern"},
	{name: "session_get no-break space", tool: SessionGet, args: `{"session_id":"\u00a0"}`, code: -32602, err: "invalid arguments at $.session_id: pattern"},
	{name: "session_get em space and BOM", tool: SessionGet, args: `{"session_id":"\u2003\ufeff\u3000"}`, code: -32602, err: "invalid arguments at $.session_id: pattern"},
	{name: "session_get line separator", tool: SessionGet, args: `{"session_id":"\u2028\u2029"}`, code: -32602, err: "invalid arguments at $.session_id: pattern"},
	{name: "session_get NEL is not ECMA space", tool: SessionGet, args: `{"session_id":"\u0085"}`, want: `{"session_id":"\u0085"}`},
	{name: "session_get zero width space is not ECMA space", tool: SessionGet, args: `{"session_id":"\u200b"}`, want: `{"session_id":"\u200b"}`},
	{name: "session_get number", tool: SessionGet, args: `{"session_id":5}`, code: -32602, err: "invalid arguments at $.session_id: type"},
	{name: "session_get null id", tool: SessionGet, args: `{"session_id":null}`, code: -32602, err: "invalid arguments at $.session_id: type"},
	{name: "session_get object id", tool: SessionGet, args: `{"session_id":{}}`, code: -32602, err: "invalid arguments at $.session_id: type"},
	{name: "session_get extra", tool: SessionGet, args: `{"session_id":"s","x":1}`, code: -32602, err: "invalid arguments at $.x: additionalProperties"},
	{name: "session_get required before a later extra", tool: SessionGet, args: `{"x":1}`, code: -32602, err: "invalid arguments at $.session_id: required"},
	{name: "session_get extra before a later required", tool: SessionGet, args: `{"a":1}`, code: -32602, err: "invalid arguments at $.a: additionalProperties"},
	{name: "session_get ordered by path", tool: SessionGet, args: `{"session_id":"","x":1}`, code: -32602, err: "invalid arguments at $.session_id: minLength"},
	{name: "session_get extra named by path", tool: SessionGet, args: `{"session_id":"","extra":1}`, code: -32602, err: "invalid arguments at $.extra: additionalProperties"},
	{name: "session_get odd extra name quoted", tool: SessionGet, args: `{"session_id":"s","a b\"":1}`, code: -32602, err: `invalid arguments at $["a b\""]: additionalProperties`},
	{name: "session_get minLength before pattern", tool: PromptCancel, args: `{"session_id":""}`, code: -32602, err: "invalid arguments at $.session_id: minLength"},
	{name: "session_get wrong case key", tool: SessionGet, args: `{"Session_ID":"s"}`, code: -32602, err: "invalid arguments at $.Session_ID: additionalProperties"},
	{name: "session_get empty key", tool: SessionGet, args: `{"":""}`, code: -32602, err: "invalid arguments at $.session_id: required"},
	{name: "session_get duplicate key last wins", tool: SessionGet, args: `{"session_id":"","session_id":"s"}`, want: `{"session_id":"s"}`},
	{name: "prompt_cancel ok", tool: PromptCancel, args: `{"session_id":"mcp_1"}`, want: `{"session_id":"mcp_1"}`},
	{name: "prompt_cancel array", tool: PromptCancel, args: `["mcp_1"]`, code: -32602, err: "invalid arguments at $: type"},

	// prompt_send: prompt required, session_id optional but non-blank.
	{name: "prompt_send ok", tool: PromptSend, args: `{"prompt":"hi"}`, want: `{"prompt":"hi"}`},
	{name: "prompt_send with session", tool: PromptSend, args: `{"prompt":"hi","session_id":"s"}`, want: `{"prompt":"hi","session_id":"s"}`},
	{name: "prompt_send unicode kept", tool: PromptSend, args: `{"prompt":"Grüße 👋 <&>"}`, want: `{"prompt":"Grüße 👋 <&>"}`},
	{name: "prompt_send missing prompt", tool: PromptSend, args: `{"session_id":"s"}`, code: -32602, err: "invalid arguments at $.prompt: required"},
	{name: "prompt_send empty prompt", tool: PromptSend, args: `{"prompt":""}`, code: -32602, err: "invalid arguments at $.prompt: minLength"},
	{name: "prompt_send blank session", tool: PromptSend, args: `{"prompt":"hi","session_id":" "}`, code: -32602, err: "invalid arguments at $.session_id: pattern"},
	{name: "prompt_send empty session", tool: PromptSend, args: `{"prompt":"hi","session_id":""}`, code: -32602, err: "invalid arguments at $.session_id: minLength"},
	{name: "prompt_send null session is not normalised", tool: PromptSend, args: `{"prompt":"hi","session_id":null}`, code: -32602, err: "invalid arguments at $.session_id: type"},
	{name: "prompt_send prompt before session", tool: PromptSend, args: `{"prompt":" ","session_id":""}`, code: -32602, err: "invalid arguments at $.prompt: pattern"},
	{name: "prompt_send array prompt", tool: PromptSend, args: `{"prompt":["hi"]}`, code: -32602, err: "invalid arguments at $.prompt: type"},
	{name: "prompt_send boolean prompt", tool: PromptSend, args: `{"prompt":true}`, code: -32602, err: "invalid arguments at $.prompt: type"},

	// tool_call: arguments missing or null become {} (the only normalisation).
	{name: "tool_call without arguments", tool: ToolCall, args: `{"name":"read"}`, want: `{"arguments":{},"name":"read"}`},
	{name: "tool_call null arguments", tool: ToolCall, args: `{"name":"read","arguments":null}`, want: `{"arguments":{},"name":"read"}`},
	{name: "tool_call arguments", tool: ToolCall, args: `{"name":"read","arguments":{"path":"a.txt","n":[1,2.5,null]}}`,
		want: `{"arguments":{"n":[1,2.5,null],"path":"a.txt"},"name":"read"}`},
	{name: "tool_call big numbers kept exactly", tool: ToolCall, args: `{"name":"x","arguments":{"id":12345678901234567890,"f":1e400,"g":-0.0}}`,
		want: `{"arguments":{"f":1e400,"g":-0.0,"id":12345678901234567890},"name":"x"}`},
	{name: "tool_call number of 1,001 digits refused", tool: ToolCall, args: `{"name":"x","arguments":{"n":[1,` + strings.Repeat("7", 1001) + `]}}`,
		code: -32602, err: "invalid arguments at $.arguments.n[1]: type"},
	{name: "tool_call inner arguments are not checked", tool: ToolCall, args: `{"name":"x","arguments":{"":{"a":[]}}}`,
		want: `{"arguments":{"":{"a":[]}},"name":"x"}`},
	{name: "tool_call array arguments", tool: ToolCall, args: `{"name":"read","arguments":[]}`, code: -32602, err: "invalid arguments at $.arguments: type"},
	{name: "tool_call string arguments", tool: ToolCall, args: `{"name":"read","arguments":"{}"}`, code: -32602, err: "invalid arguments at $.arguments: type"},
	{name: "tool_call missing name", tool: ToolCall, args: `{"arguments":{}}`, code: -32602, err: "invalid arguments at $.name: required"},
	{name: "tool_call no args", tool: ToolCall, nilArgs: true, code: -32602, err: "invalid arguments at $.name: required"},
	{name: "tool_call null args", tool: ToolCall, args: `null`, code: -32602, err: "invalid arguments at $.name: required"},
	{name: "tool_call empty name", tool: ToolCall, args: `{"name":""}`, code: -32602, err: "invalid arguments at $.name: minLength"},
	{name: "tool_call blank name", tool: ToolCall, args: `{"name":"\n"}`, code: -32602, err: "invalid arguments at $.name: pattern"},
	{name: "tool_call null name", tool: ToolCall, args: `{"name":null}`, code: -32602, err: "invalid arguments at $.name: type"},
	{name: "tool_call extra", tool: ToolCall, args: `{"name":"read","args":{}}`, code: -32602, err: "invalid arguments at $.args: additionalProperties"},
	{name: "tool_call arguments before name", tool: ToolCall, args: `{"name":5,"arguments":5}`, code: -32602, err: "invalid arguments at $.arguments: type"},
	{name: "tool_call array", tool: ToolCall, args: `[{"name":"read"}]`, code: -32602, err: "invalid arguments at $: type"},
}

// asMap is a, typed, as the arguments object it was taken from: every
// member the schema allows and the call sent (session_id is never sent
// empty), and tool_call's arguments always.
func asMap(a Args) map[string]any {
	m := map[string]any{}
	switch a := a.(type) {
	case SessionGetArgs:
		m["session_id"] = a.SessionID
	case PromptSendArgs:
		m["prompt"] = a.Prompt
		if a.SessionID != "" {
			m["session_id"] = a.SessionID
		}
	case PromptCancelArgs:
		m["session_id"] = a.SessionID
	case ToolCallArgs:
		m["name"] = a.Name
		m["arguments"] = a.Arguments
	}
	return m
}

func TestValidate(t *testing.T) {
	for _, tt := range validateCases {
		t.Run(tt.name, func(t *testing.T) {
			var args json.RawMessage
			if !tt.nilArgs {
				args = json.RawMessage(tt.args)
			}
			got, err := Validate(tt.tool, args)
			if tt.code == 0 {
				if err != nil {
					t.Fatalf("Validate(%q, %s) error = %v, want nil", tt.tool, tt.args, err)
				}
				want, err := canonjson.Decode([]byte(tt.want))
				if err != nil {
					t.Fatalf("bad want %s: %v", tt.want, err)
				}
				if got.tool() != tt.tool {
					t.Errorf("Validate(%q, %s) = %T, the arguments of %s", tt.tool, tt.args, got, got.tool())
				}
				if diff := cmp.Diff(want, any(asMap(got))); diff != "" {
					t.Errorf("Validate(%q, %s) mismatch (-want +got):\n%s", tt.tool, tt.args, diff)
				}
				return
			}
			if got != nil {
				t.Errorf("Validate(%q, %s) = %v with an error, want nil", tt.tool, tt.args, got)
			}
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) {
				t.Fatalf("Validate(%q, %s) error = %v (%T), want *jsonrpc.Error", tt.tool, tt.args, err, err)
			}
			if werr.Code != tt.code {
				t.Errorf("Validate(%q, %s) code = %d, want %d (%s)", tt.tool, tt.args, werr.Code, tt.code, werr.Message)
			}
			if tt.code == jsonrpc.CodeInvalidParams && werr.Message != tt.err {
				t.Errorf("Validate(%q, %s) message = %q, want %q", tt.tool, tt.args, werr.Message, tt.err)
			}
		})
	}
}

func TestValidateUnknownToolMessage(t *testing.T) {
	_, err := Validate("session_delete", nil)
	want := &jsonrpc.Error{Code: -32601, Message: `unknown tool "session_delete"`}
	if diff := cmp.Diff(want, err); diff != "" {
		t.Errorf("Validate(unknown) mismatch (-want +got):\n%s", diff)
	}
}

// The returned arguments are fresh: changing them changes neither the
// input nor the next result.
func TestValidateFresh(t *testing.T) {
	args := json.RawMessage(`{"name":"read","arguments":{"path":"a"}}`)
	keep := slices.Clone(args)
	first, err := Validate(ToolCall, args)
	if err != nil {
		t.Fatal(err)
	}
	first.(ToolCallArgs).Arguments["path"] = "changed"
	second, err := Validate(ToolCall, args)
	if err != nil {
		t.Fatal(err)
	}
	want := ToolCallArgs{Name: "read", Arguments: map[string]any{"path": "a"}}
	if diff := cmp.Diff(Args(want), second); diff != "" {
		t.Errorf("second Validate mismatch (-want +got):\n%s", diff)
	}
	if !bytes.Equal(args, keep) {
		t.Errorf("Validate changed its input: %s, want %s", args, keep)
	}
	empty, _ := Validate(ToolCall, json.RawMessage(`{"name":"x"}`))
	empty.(ToolCallArgs).Arguments["k"] = 1
	again, _ := Validate(ToolCall, json.RawMessage(`{"name":"x"}`))
	if n := len(again.(ToolCallArgs).Arguments); n != 0 {
		t.Errorf("normalised arguments shared between calls: got %d keys, want 0", n)
	}
}

// CheckPrompt is prompt_send's rule for its prompt, exactly: what Validate
// refuses in a prompt it refuses, with the reason.
func TestCheckPrompt(t *testing.T) {
	for _, c := range []struct {
		text string
		want error
	}{
		{"hi", nil},
		{"\u00a0hi", nil},
		{" a ", nil},
		{"", ErrBlankPrompt},
		{" \t\n", ErrBlankPrompt},
		{"\u00a0\u3000", ErrBlankPrompt},
		{"\ufeff", ErrBlankPrompt},
		{"a\x00b", ErrNULPrompt},
	} {
		if err := CheckPrompt(c.text); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("CheckPrompt(%q) = %v, want %v", c.text, err, c.want)
		}
		args, _ := json.Marshal(PromptSendArgs{Prompt: c.text})
		if _, err := Validate(PromptSend, args); (err == nil) != (c.want == nil) {
			t.Errorf("Validate(prompt_send, %q) = %v, but CheckPrompt says %v", c.text, err, c.want)
		}
	}
}

func TestValidateConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, tt := range validateCases {
				_, err := Validate(tt.tool, json.RawMessage(tt.args))
				if (err == nil) != (tt.code == 0) && !tt.nilArgs {
					t.Errorf("Validate(%q, %s) error = %v, want code %d", tt.tool, tt.args, err, tt.code)
				}
			}
		})
	}
	wg.Wait()
}

var messageRE = regexp.MustCompile(`^invalid arguments at \$(\.[A-Za-z_][A-Za-z0-9_]*|\[".*"\]|\[[0-9]+\])*(\.\.\.)?: (type|required|additionalProperties|minLength|pattern)$`)

// wrapperProps is docs/contract.md section 4's input table, written out by hand:
// each tool's properties ("nb" a non-blank string, "object" an object) and
// which are required. FuzzValidate checks Validate against it.
var wrapperProps = map[string]map[string]struct {
	kind     string
	required bool
}{
	SessionsList: {},
	SessionGet:   {"session_id": {"nb", true}},
	PromptSend:   {"prompt": {"nb", true}, "session_id": {"nb", false}},
	PromptCancel: {"session_id": {"nb", true}},
	ToolsList:    {},
	ToolCall:     {"name": {"nb", true}, "arguments": {"object", false}},
}

var identifierRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ecmaBlank reports whether s holds only ECMA-262 white space and line
// terminators (what the "\S" pattern rejects).
func ecmaBlank(s string) bool {
	for _, r := range s {
		if !strings.ContainsRune("\t\n\v\f\r\u2028\u2029\ufeff", r) && !unicode.Is(unicode.Zs, r) {
			return false
		}
	}
	return true
}

// contractViolation is the first "path: keyword" failure of args for tool
// by the contract's rules, computed without the schema package, or "" when
// args are valid. A property whose name is not an identifier has path
// `$[...]`, returned as that prefix only.
func contractViolation(tool string, args []byte) string {
	var v any = map[string]any{}
	if len(args) > 0 {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return "$: type"
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return "$: type"
		}
		if v == nil {
			v = map[string]any{}
		}
	}
	if hasLongNumber(v) {
		return "$...: type" // somewhere; see FuzzValidate
	}
	m, ok := v.(map[string]any)
	if !ok {
		return "$: type"
	}
	path := func(name string) string {
		if identifierRE.MatchString(name) && len(name) <= 64 {
			return "$." + name
		}
		return "$["
	}
	var found []string
	props := wrapperProps[tool]
	for name, val := range m {
		p, known := props[name]
		switch {
		case !known:
			found = append(found, path(name)+": additionalProperties")
		case p.kind == "object":
			if _, ok := val.(map[string]any); !ok && val != nil {
				found = append(found, path(name)+": type")
			}
		default:
			str, ok := val.(string)
			switch {
			case !ok:
				found = append(found, path(name)+": type")
			case str == "":
				found = append(found, path(name)+": minLength")
			case ecmaBlank(str):
				found = append(found, path(name)+": pattern")
			}
		}
	}
	for name, p := range props {
		if _, present := m[name]; p.required && !present {
			found = append(found, path(name)+": required")
		}
	}
	if len(found) == 0 {
		return ""
	}
	slices.Sort(found)
	return found[0]
}

// hasLongNumber reports a number literal the schema package refuses for its
// length, anywhere in v.
func hasLongNumber(v any) bool {
	switch v := v.(type) {
	case json.Number:
		return len(v) > schema.MaxNumberBytes
	case map[string]any:
		for _, e := range v {
			if hasLongNumber(e) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if hasLongNumber(e) {
				return true
			}
		}
	}
	return false
}

// FuzzValidate: Validate never panics, never changes its input, returns
// either a map or a -32601/-32602 *jsonrpc.Error with a bounded message, and
// its verdict and its first (path, keyword) are those of the contract's
// rules computed independently (contractViolation).
func FuzzValidate(f *testing.F) {
	for _, tt := range validateCases {
		f.Add(tt.tool, []byte(tt.args))
	}
	f.Fuzz(func(t *testing.T, tool string, args []byte) {
		keep := slices.Clone(args)
		got, err := Validate(tool, args)
		if !bytes.Equal(args, keep) {
			t.Fatalf("Validate(%q, %q) changed its input to %q", tool, keep, args)
		}
		_, known := lookup(tool)
		if !known {
			var werr *jsonrpc.Error
			if got != nil || !errors.As(err, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
				t.Fatalf("Validate(%q, %q) = %v, %v; want -32601", tool, args, got, err)
			}
			return
		}
		want := contractViolation(tool, args)
		if err == nil {
			if got == nil {
				t.Fatalf("Validate(%q, %q) = nil, nil", tool, args)
			}
			if want != "" {
				t.Fatalf("Validate(%q, %q) accepted arguments the contract rejects with %q", tool, args, want)
			}
			// The result must itself be valid, and stable under re-encoding.
			enc, err := json.Marshal(asMap(got))
			if err != nil {
				t.Fatalf("marshal result of Validate(%q, %q): %v", tool, args, err)
			}
			again, err := Validate(tool, enc)
			if err != nil {
				t.Fatalf("Validate(%q, %s) (its own result) = %v", tool, enc, err)
			}
			if diff := cmp.Diff(asMap(got), asMap(again)); diff != "" {
				t.Fatalf("Validate(%q) not stable under re-encoding (-first +second):\n%s", tool, diff)
			}
			if tool == ToolCall {
				if got.(ToolCallArgs).Arguments == nil {
					t.Fatalf("Validate(tool_call, %q) arguments = nil, want an object", args)
				}
			}
			return
		}
		var werr *jsonrpc.Error
		if got != nil || !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("Validate(%q, %q) = %v, %v (%T); want -32602", tool, args, got, err, err)
		}
		if !messageRE.MatchString(werr.Message) || len(werr.Message) >= 1024 {
			t.Fatalf("Validate(%q, %q) message %q does not match %s in under 1 KiB", tool, args, werr.Message, messageRE)
		}
		msg := strings.TrimPrefix(werr.Message, "invalid arguments at ")
		if want == "" {
			t.Fatalf("Validate(%q, %q) = %q, but the contract accepts the arguments", tool, args, msg)
		}
		if want == "$...: type" {
			if keywordOf(msg) != "type" {
				t.Fatalf("Validate(%q, %q) = %q, want a type failure for a long number", tool, args, msg)
			}
		} else if prefix, ok := strings.CutSuffix(want, ": "+keywordOf(want)); ok && prefix == "$[" {
			if !strings.HasPrefix(msg, "$[") || keywordOf(msg) != keywordOf(want) {
				t.Fatalf("Validate(%q, %q) = %q, want $[...]: %s", tool, args, msg, keywordOf(want))
			}
		} else if msg != want {
			t.Fatalf("Validate(%q, %q) = %q, want %q", tool, args, msg, want)
		}
	})
}

func keywordOf(violation string) string {
	return violation[strings.LastIndex(violation, ": ")+2:]
}

// BenchmarkValidate measures Validate for a valid call and a failing one of
// each wrapper shape.
func BenchmarkValidate(b *testing.B) {
	for _, bc := range []struct{ name, tool, args string }{
		{"prompt_send/valid", PromptSend, `{"prompt":"hello there","session_id":"mcp_0123456789abcdef0123456789abcdef"}`},
		{"prompt_send/invalid", PromptSend, `{"prompt":" ","session_id":"","extra":1}`},
		{"tool_call/valid", ToolCall, `{"name":"memory_search","arguments":{"query":"notes","limit":10}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			args := json.RawMessage(bc.args)
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Validate(bc.tool, args)
			}
		})
	}
}

// TestValidateMessageBounded: an error message never echoes more than a
// short excerpt of the tool name or the arguments, whatever their size.
func TestValidateMessageBounded(t *testing.T) {
	_, err := Validate(strings.Repeat("x", 15<<20), nil)
	var nerr *jsonrpc.Error
	if !errors.As(err, &nerr) || nerr.Code != jsonrpc.CodeMethodNotFound || len(nerr.Message) >= 1024 {
		t.Errorf("Validate(15 MiB name) = %.100v (%d bytes), want -32601 under 1 KiB", err, len(nerr.Message))
	}
	huge := strings.Repeat("ä", 1<<20)
	for _, args := range []string{
		`{"session_id":"s",` + strconv.Quote(huge) + `:1}`,
		`{"session_id":` + strconv.Quote(huge+" ") + `,"x":1}`,
		`{"` + strings.Repeat(`\u0000`, 4096) + `":1}`,
	} {
		_, err := Validate(SessionGet, json.RawMessage(args))
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
			t.Fatalf("Validate(session_get, %d bytes) = %v, want -32602", len(args), err)
		}
		if n := len(werr.Message) + len(werr.Data); n >= 1024 || !utf8.ValidString(werr.Message) {
			t.Errorf("Validate(session_get, %d bytes) message is %d bytes (%.80q...), want a clipped excerpt under 1 KiB", len(args), n, werr.Message)
		}
	}
}

func TestValidateCallParams(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		params, want string // want "" for accepted
	}{
		{`{"name":"session_get","arguments":{"session_id":"x"}}`, ""},
		{`{"name":"x","_meta":{}}`, ""},
		{`{"name":"x","_meta":{"progressToken":"` + strings.Repeat("t", MaxProgressTokenBytes) + `"}}`, ""},
		{`{"name":"x","_meta":{"progressToken":-9007199254740991}}`, ""},
		{`{"name":"x","arguments":{"a":` + deep(MaxParamsDepth-2) + `}}`, ""},
		{``, "invalid arguments at $: required"},
		{`null`, "invalid arguments at $: type"},
		{`[1]`, "invalid arguments at $: type"},
		{`{}`, "invalid arguments at $.name: required"},
		{`{"name":null}`, "invalid arguments at $.name: type"},
		{`{"name":5}`, "invalid arguments at $.name: type"},
		{`{"name":"x","_meta":"x"}`, "invalid arguments at $._meta: type"},
		{`{"name":"x","_meta":null}`, "invalid arguments at $._meta: type"},
		{`{"name":"x","_meta":{"progressToken":{}}}`, "invalid arguments at $._meta.progressToken: type"},
		{`{"name":"x","_meta":{"progressToken":true}}`, "invalid arguments at $._meta.progressToken: type"},
		{`{"name":"x","_meta":{"progressToken":null}}`, "invalid arguments at $._meta.progressToken: type"},
		{`{"name":"x","_meta":{"progressToken":1.5}}`, "invalid arguments at $._meta.progressToken: type"},
		{`{"name":"x","_meta":{"progressToken":1e3}}`, "invalid arguments at $._meta.progressToken: type"},
		{`{"name":"x","_meta":{"progressToken":9007199254740992}}`, "invalid arguments at $._meta.progressToken: maximum"},
		{`{"name":"x","_meta":{"progressToken":99999999999999999999}}`, "invalid arguments at $._meta.progressToken: maximum"},
		{`{"name":"x","_meta":{"progressToken":"` + strings.Repeat("t", MaxProgressTokenBytes+1) + `"}}`, "invalid arguments at $._meta.progressToken: maxLength"},
		{`{"name":"x","arguments":{"a":` + deep(MaxParamsDepth-1) + `}}`, "invalid arguments at $.a" + strings.Repeat("[0]", MaxParamsDepth-2) + ": maxDepth"},
		{`{"name":"x","arguments":{"k":1,"b c":[0,{"d":` + deep(MaxParamsDepth) + `}]}}`, `invalid arguments at $["b c"][1].d` + strings.Repeat("[0]", MaxParamsDepth-4) + ": maxDepth"},
		{`{"name":"x","_meta":{"x":` + deep(MaxParamsDepth) + `}}`, "invalid arguments at $._meta.x" + strings.Repeat("[0]", MaxParamsDepth-2) + ": maxDepth"},
		// Members are named as go-sdk's decoder names them: letter case
		// counts, escapes are unescaped, the last of a name counts. A
		// "NAME" is no name (go-sdk would look up the tool ""), and a
		// "_Meta" no _meta.
		{`{"NAME":"x"}`, "invalid arguments at $.name: required"},
		{`{"n\u0061me":"x","_m\u0065ta":{"progressToken":true}}`, "invalid arguments at $._meta.progressToken: type"},
		{`{"name":"x","_Meta":{"progressToken":true}}`, ""},
		{`{"name":"x","_meta":{"ProgressToken":true}}`, ""},
		{`{"name":"x","_meta":{"progressToken":"ok","PROGRESSTOKEN":true}}`, ""},
		{`{"name":"x","_meta":{"PROGRESSTOKEN":"ok","progressToken":true}}`, "invalid arguments at $._meta.progressToken: type"},
		{`{"name":"x","name":5}`, "invalid arguments at $.name: type"},
		{`{"name":5,"Name":"x","arguments":{"name":5}}`, "invalid arguments at $.name: type"},
		{`{"name":"x",}`, "invalid arguments at $: type"},
		{`{"name":"x"} {}`, "invalid arguments at $: type"},
	}
	for _, c := range cases {
		err := ValidateCallParams(json.RawMessage(c.params))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("ValidateCallParams(%.80s) = %v, want nil", c.params, err)
		case c.want != "" && (err == nil || err.Code != jsonrpc.CodeInvalidParams || err.Message != c.want):
			t.Errorf("ValidateCallParams(%.80s) = %v, want -32602 %q", c.params, err, c.want)
		}
	}
}

// TestValidateRefusesNUL: U+0000 anywhere in the wrapper arguments, a key
// included, is refused after the schema passes, naming the first field in
// key order; the schema's own violations come first.
func TestValidateRefusesNUL(t *testing.T) {
	for _, c := range []struct {
		tool, args, want string
	}{
		{PromptSend, `{"prompt":"a\u0000b"}`, "invalid arguments at $.prompt: contains U+0000"},
		{PromptSend, `{"prompt":"hi","session_id":"s\u0000"}`, "invalid arguments at $.session_id: contains U+0000"},
		{ToolCall, `{"name":"t","arguments":{"z":"ok","a":["x","\u0000"]}}`, "invalid arguments at $.arguments.a[1]: contains U+0000"},
		{PromptSend, `{"prompt":" ","x":"\u0000"}`, "invalid arguments at $.extra"},
	} {
		_, err := Validate(c.tool, json.RawMessage(c.args))
		var jerr *jsonrpc.Error
		if !errors.As(err, &jerr) || jerr.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("Validate(%s, %s) = %v, want -32602", c.tool, c.args, err)
			continue
		}
		if c.tool == PromptSend && strings.Contains(c.args, `"x"`) {
			if strings.Contains(jerr.Message, "U+0000") {
				t.Errorf("Validate(%s, %s) = %q, want the schema's violation before the NUL", c.tool, c.args, jerr.Message)
			}
			continue
		}
		if jerr.Message != c.want {
			t.Errorf("Validate(%s, %s) = %q, want %q", c.tool, c.args, jerr.Message, c.want)
		}
	}
	if _, err := Validate(PromptSend, json.RawMessage(`{"prompt":"fine"}`)); err != nil {
		t.Errorf("Validate(prompt_send, fine) = %v", err)
	}
}

// BenchmarkValidateCallParamsMaximal: the params of a maximal tools/call,
// most of them one string inside the arguments.
func BenchmarkValidateCallParamsMaximal(b *testing.B) {
	params := json.RawMessage(`{"name":"tool_call","arguments":{"name":"memory_update","arguments":{"path":"p","content":"` + strings.Repeat("a", 16<<20) + `"}}}`)
	b.SetBytes(int64(len(params)))
	for b.Loop() {
		if err := ValidateCallParams(params); err != nil {
			b.Fatal(err)
		}
	}
}
