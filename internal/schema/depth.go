package schema

import (
	"encoding/json"

	"github.com/openprogram/openprogram/internal/canonjson"
)

// KeywordMaxDepth is the keyword of a [Violation] that [CheckDepth] reports.
// It is not a JSON Schema keyword: nesting is bounded outside any schema.
const KeywordMaxDepth = "maxDepth"

// CheckDepth reports the first place where data, one JSON value, nests
// objects and arrays more than max levels deep (the value itself, when it
// is an object or an array, is level 1), or nil when it never does. The
// violation's path names the object or array that passes the bound, formatted
// and bounded as every [Violation] path is. data is scanned once, without
// decoding it: the check costs no memory beyond the path of the current
// position, so it can run before anything decodes a value that is too
// deep. data that is not valid JSON gives no reliable answer; check it
// first.
func CheckDepth(data []byte, max int) *Violation {
	type level struct {
		object    bool
		expectKey bool   // an object, before its next key
		key       []byte // an object: the raw (quoted) key of the current member
		index     int    // an array: the index of the current item
	}
	var stack []level
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			start := i
			i = canonjson.StringEnd(data, i)
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				stack[n-1].key, stack[n-1].expectKey = data[start:min(i+1, len(data))], false
			}
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].object {
					stack[n-1].expectKey = true
				} else {
					stack[n-1].index++
				}
			}
		case '{', '[':
			if len(stack) == max {
				loc := make([]token, len(stack))
				for j, l := range stack {
					loc[j] = token{index: l.index}
					if l.object {
						loc[j].index = -1
						if json.Unmarshal(l.key, &loc[j].name) != nil {
							loc[j].name = string(l.key)
						}
					}
				}
				return &Violation{Path: formatTokens(loc), Keyword: KeywordMaxDepth}
			}
			stack = append(stack, level{object: data[i] == '{', expectKey: data[i] == '{'})
		case '}', ']':
			if n := len(stack); n > 0 {
				stack = stack[:n-1]
			}
		}
	}
	return nil
}
