package contracts

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// checkNUL refuses validated wrapper arguments holding U+0000 in any string
// (a key or a value, at any depth, tool_call arguments included): -32602
// naming the first such field in key order. No backend can store NUL
// (PostgreSQL text cannot), so refusing it here, before anything is
// written, makes every backend behave alike (docs/contract.md, "U+0000 in
// text").
func checkNUL(args map[string]any) error {
	if path, ok := findNUL("$", args); ok {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid arguments at %s: contains U+0000", path)}
	}
	return nil
}

// findNUL returns the path of the first string in v holding U+0000.
func findNUL(path string, v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return path, strings.IndexByte(x, 0) >= 0
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := path + "." + k
			if strings.IndexByte(k, 0) >= 0 {
				return p, true
			}
			if found, ok := findNUL(p, x[k]); ok {
				return found, true
			}
		}
	case []any:
		for i, e := range x {
			if found, ok := findNUL(fmt.Sprintf("%s[%d]", path, i), e); ok {
				return found, true
			}
		}
	}
	return "", false
}
