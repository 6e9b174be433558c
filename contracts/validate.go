package contracts

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/openprogram/openprogram/internal/canonjson"
	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/internal/schema"
)

// Args are the validated arguments of one of the six tools, as [Validate]
// returns them: a [SessionsListArgs], [SessionGetArgs], [PromptSendArgs],
// [PromptCancelArgs], [ToolsListArgs] or [ToolCallArgs] value.
type Args interface{ tool() string }

func (SessionsListArgs) tool() string { return SessionsList }
func (SessionGetArgs) tool() string   { return SessionGet }
func (PromptSendArgs) tool() string   { return PromptSend }
func (PromptCancelArgs) tool() string { return PromptCancel }
func (ToolsListArgs) tool() string    { return ToolsList }
func (ToolCallArgs) tool() string     { return ToolCall }

// Validate checks the arguments of a call to one of the six tools and
// decodes them, in the one pass, into the tool's typed arguments (an [Args]
// of the tool's own type, which the caller owns): the JSON is decoded once,
// checked against the frozen schema, and the checked value's members are
// taken over as they are, never encoded and decoded again.
//
// Errors are *jsonrpc.Error values:
//   - an unknown name: code -32601 ([jsonrpc.CodeMethodNotFound]), whose
//     message quotes at most a clipped excerpt of the name;
//   - arguments that are not JSON, not an object, or fail the tool's input
//     schema: code -32602 ([jsonrpc.CodeInvalidParams]) with the message
//     "invalid arguments at <path>: <keyword>", where path is "$" or
//     "$.field" and the reported failure is the first of all failures ordered
//     by (path, keyword). The path names the property concerned: for required
//     the missing one ("$.session_id: required"), for additionalProperties
//     the unexpected one ("$.extra: additionalProperties"); a name that is
//     not an identifier is quoted (`$["a b"]`) and a long one clipped, so the
//     message never echoes more than a short excerpt of args. Unparseable
//     JSON is reported as "$: type".
//
// Missing arguments (nil or empty args) and a JSON null both mean {}: MCP
// lets clients omit tools/call arguments. Apart from that, the only
// normalisation is tool_call's own "arguments" member: when it is missing or
// null, ToolCallArgs.Arguments is an empty map. Nothing is trimmed, coerced
// or defaulted.
//
// Arguments that pass the schema but hold U+0000 in any string or key
// (prompt, session_id, name, anything inside tool_call's arguments) are
// refused as "invalid arguments at <path>: contains U+0000", naming the
// first such field in key order: no store can keep NUL, so every backend
// behaves alike.
//
// Numbers in ToolCallArgs.Arguments are json.Number, so re-encoding them
// (on their way to a runtime tool) loses no precision. Validate never
// modifies args.
//
// Validity is decided by the [schema] package (JSON Schema 2020-12, patterns
// with their ECMA-262 meaning, so a string of only no-break or other Unicode
// spaces is blank) against schemas compiled once, on their first use.
func Validate(name string, args json.RawMessage) (Args, error) {
	t, ok := lookup(name)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("unknown tool %q", clip.String(name, maxNameExcerpt))}
	}
	var value any = map[string]any{}
	if len(args) > 0 {
		v, err := canonjson.Decode(args)
		if err != nil {
			return nil, invalidArguments(schema.Violation{Path: "$", Keyword: "type"})
		}
		if v != nil { // null means missing
			value = v
		}
	}
	if name == ToolCall {
		if m, ok := value.(map[string]any); ok {
			if a, present := m["arguments"]; !present || a == nil {
				m["arguments"] = map[string]any{}
			}
		}
	}
	compiled, err := t.compiled()
	if err != nil {
		// The six schemas are fixed and pinned by a golden test: this is
		// a broken build, not bad input.
		panic(fmt.Sprintf("contracts: %v", err))
	}
	if v := compiled.Validate(value); v != nil {
		return nil, invalidArguments(*v)
	}
	m, ok := value.(map[string]any)
	if !ok { // every input schema has "type":"object"
		return nil, invalidArguments(schema.Violation{Path: "$", Keyword: "type"})
	}
	if err := checkNUL(m); err != nil { // nul.go
		return nil, err
	}
	return typed(name, m), nil
}

// typed takes the members of a checked arguments object over into the
// tool's arguments type. The schema fixed every member's type (and allows
// no other member), so each is read as what it is.
func typed(name string, m map[string]any) Args {
	str := func(k string) string { s, _ := m[k].(string); return s }
	switch name {
	case SessionGet:
		return SessionGetArgs{SessionID: str("session_id")}
	case PromptSend:
		return PromptSendArgs{Prompt: str("prompt"), SessionID: str("session_id")}
	case PromptCancel:
		return PromptCancelArgs{SessionID: str("session_id")}
	case ToolsList:
		return ToolsListArgs{}
	case ToolCall:
		a, _ := m["arguments"].(map[string]any)
		return ToolCallArgs{Name: str("name"), Arguments: a}
	default:
		return SessionsListArgs{}
	}
}

// Errors of [CheckPrompt].
var (
	// ErrBlankPrompt: the prompt is empty or only white space (Unicode's,
	// as the schema's pattern means it: no-break spaces and a byte order
	// mark too).
	ErrBlankPrompt = errors.New("the prompt is blank")
	// ErrNULPrompt: the prompt holds U+0000, which no store can keep.
	ErrNULPrompt = errors.New("the prompt holds U+0000")
)

// CheckPrompt applies to text the rule prompt_send applies to its prompt,
// for a front end whose prompt does not arrive as JSON (the owner's
// console): the same frozen schema and the same U+0000 check as
// [Validate], so what an MCP client cannot send nobody can. It returns nil,
// [ErrBlankPrompt] or [ErrNULPrompt].
func CheckPrompt(text string) error {
	t, _ := lookup(PromptSend)
	compiled, err := t.compiled()
	if err != nil {
		panic(fmt.Sprintf("contracts: %v", err))
	}
	args := map[string]any{"prompt": text}
	if v := compiled.Validate(args); v != nil {
		return ErrBlankPrompt
	}
	if checkNUL(args) != nil {
		return ErrNULPrompt
	}
	return nil
}

// maxNameExcerpt bounds how much of an unknown tool name an error repeats.
const maxNameExcerpt = 64

func invalidArguments(v schema.Violation) *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidParams,
		Message: "invalid arguments at " + v.String(),
	}
}

// Bounds of the tools/call params that [ValidateCallParams] enforces.
const (
	// MaxProgressTokenBytes bounds a string _meta.progressToken: the token
	// is echoed in every progress notification.
	MaxProgressTokenBytes = 256
	// MaxParamsDepth bounds how deeply the params of a tools/call nest
	// objects and arrays; params itself is level 1, so the arguments of a
	// call may nest MaxParamsDepth-1 levels.
	MaxParamsDepth = 64
)

// maxSafeInteger bounds integer progress tokens: go-sdk decodes JSON numbers
// through float64, so a larger integer would be echoed as another number.
const maxSafeInteger = 1<<53 - 1

// ValidateCallParams checks the params of a tools/call request, raw as they
// arrived, before anything decodes them. It returns nil when they are an
// object whose "name" is a string, whose "_meta", when present, is an object
// whose "progressToken", when present, is a string of at most
// [MaxProgressTokenBytes] bytes or an integer literal within ±(2^53-1), and
// which nests at most [MaxParamsDepth] levels. Anything else is a -32602
// *jsonrpc.Error ([jsonrpc.CodeInvalidParams]) in the form of [Validate]'s
// errors, its path rooted at params: "invalid arguments at $.name: type",
// "invalid arguments at $._meta.progressToken: maxLength", "invalid arguments at
// $: required" (no params) or "$: type" (params not an object). Nesting too
// deep inside "arguments" is reported as [Validate] would report it,
// rooted at the arguments: "invalid arguments at $.a.b: maxDepth".
//
// The arguments themselves are left to [Validate].
func ValidateCallParams(params json.RawMessage) *jsonrpc.Error {
	params = bytes.TrimSpace(params)
	if len(params) == 0 {
		return invalidParams(schema.Violation{Path: "$", Keyword: "required"})
	}
	if params[0] != '{' {
		return invalidParams(schema.Violation{Path: "$", Keyword: "type"})
	}
	if v := schema.CheckDepth(params, MaxParamsDepth); v != nil {
		if rest, ok := strings.CutPrefix(v.Path, "$.arguments"); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return invalidArguments(schema.Violation{Path: "$" + rest, Keyword: v.Keyword})
		}
		return invalidParams(*v)
	}
	// The members are read where they lie, named as go-sdk's decoder names
	// them (letter case counts, the last of a name counting), so that this
	// check and the server judge the same members: the arguments, most of
	// a large request, are only skipped over.
	if !json.Valid(params) {
		return invalidParams(schema.Violation{Path: "$", Keyword: "type"})
	}
	var p struct{ Name, Meta []byte }
	schema.Members(params, func(name string, _, value []byte) {
		switch {
		case name == "name":
			p.Name = value
		case name == "_meta":
			p.Meta = value
		}
	})
	switch {
	case len(p.Name) == 0:
		return invalidParams(schema.Violation{Path: "$.name", Keyword: "required"})
	case p.Name[0] != '"':
		return invalidParams(schema.Violation{Path: "$.name", Keyword: "type"})
	case len(p.Meta) == 0:
		return nil
	case p.Meta[0] != '{':
		return invalidParams(schema.Violation{Path: "$._meta", Keyword: "type"})
	}
	var token []byte // named as go-sdk names it, as name and _meta are
	schema.Members(p.Meta, func(name string, _, value []byte) {
		if name == "progressToken" {
			token = value
		}
	})
	if len(token) == 0 {
		return nil
	}
	const at = "$._meta.progressToken"
	if token[0] == '"' {
		var s string
		if json.Unmarshal(token, &s) != nil {
			return invalidParams(schema.Violation{Path: at, Keyword: "type"})
		}
		if len(s) > MaxProgressTokenBytes {
			return invalidParams(schema.Violation{Path: at, Keyword: "maxLength"})
		}
		return nil
	}
	n, err := strconv.ParseInt(string(token), 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return invalidParams(schema.Violation{Path: at, Keyword: "maximum"})
	case err != nil:
		return invalidParams(schema.Violation{Path: at, Keyword: "type"})
	case n > maxSafeInteger || n < -maxSafeInteger:
		return invalidParams(schema.Violation{Path: at, Keyword: "maximum"})
	}
	return nil
}

func invalidParams(v schema.Violation) *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidParams,
		Message: "invalid arguments at " + v.String(),
	}
}
