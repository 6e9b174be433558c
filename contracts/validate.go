package contracts

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/openprogram/openprogram/contracts/internal/canonjson"
	"github.com/openprogram/openprogram/contracts/internal/clip"
	"github.com/openprogram/openprogram/contracts/schema"
)

// Validate checks the arguments of a call to one of the six tools and returns
// them as a fresh map that the caller owns.
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
// null the returned map holds an empty object there. Nothing is trimmed,
// coerced or defaulted.
//
// Numbers in the returned map are json.Number, so re-encoding them (for
// example tool_call arguments on their way to a runtime tool) loses no
// precision. Validate never modifies args.
//
// Validity is decided by the [schema] package (JSON Schema 2020-12, patterns
// with their ECMA-262 meaning, so a string of only no-break or other Unicode
// spaces is blank) against schemas compiled once, on their first use.
func Validate(name string, args json.RawMessage) (map[string]any, error) {
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
	return m, nil
}

// maxNameExcerpt bounds how much of an unknown tool name an error repeats.
const maxNameExcerpt = 64

func invalidArguments(v schema.Violation) *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidParams,
		Message: "invalid arguments at " + v.String(),
	}
}
