package contracts

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/openprogram/openprogram/contracts/internal/canonjson"
)

// Validate checks the arguments of a call to one of the six tools and returns
// them as a fresh map that the caller owns.
//
// Errors are *jsonrpc.Error values:
//   - an unknown name: code -32601 ([jsonrpc.CodeMethodNotFound]);
//   - arguments that are not JSON, not an object, or fail the tool's input
//     schema: code -32602 ([jsonrpc.CodeInvalidParams]) with the message
//     "invalid arguments at <path>: <keyword>", where path is "$" or
//     "$.field" and the reported failure is the first of all failures ordered
//     by (path, keyword). Unparseable JSON is reported as "$: type", and
//     additionalProperties and required at the object that breaks them.
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
// Validity is decided by github.com/google/jsonschema-go (JSON Schema
// 2020-12) against schemas resolved once at init, with the "\S" pattern
// given its JSON Schema (ECMA-262) meaning, so a string of only no-break or
// other Unicode spaces is blank.
func Validate(name string, args json.RawMessage) (map[string]any, error) {
	t, ok := byName[name]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("unknown tool %q", name)}
	}
	var value any = map[string]any{}
	if len(args) > 0 {
		v, err := canonjson.Decode(args)
		if err != nil {
			return nil, invalidArguments("$", "type")
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
	// jsonschema-go wants encoding/json's default types (float64 numbers).
	plain := withFloats(value)
	if err := t.resolved.Validate(plain); err != nil {
		if v := t.check.Check(plain); len(v) > 0 {
			return nil, invalidArguments(v[0].Path, v[0].Keyword)
		}
		// Unreachable while schemacheck covers every keyword the schemas use
		// (checked at init and by FuzzValidate); never report success here.
		return nil, invalidArguments("$", "schema")
	}
	m, ok := value.(map[string]any)
	if !ok { // every input schema has "type":"object"
		return nil, invalidArguments("$", "type")
	}
	return m, nil
}

func invalidArguments(path, keyword string) *jsonrpc.Error {
	return &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidParams,
		Message: "invalid arguments at " + path + ": " + keyword,
	}
}

// withFloats returns a copy of v with every json.Number turned into a
// float64 (±Inf when it overflows, which is still a JSON number).
func withFloats(v any) any {
	switch v := v.(type) {
	case json.Number:
		// The decoder only yields valid literals; on overflow ParseFloat
		// returns ±Inf, which still has JSON type "number".
		f, _ := strconv.ParseFloat(string(v), 64)
		return f
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = withFloats(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = withFloats(e)
		}
		return s
	default:
		return v
	}
}
