package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestCheckDepthStrings: brackets inside strings do not nest, escapes
// (an escaped quote, an escaped backslash before the closing quote) do not
// end or extend a string, and a key with escapes is named in the path.
func TestCheckDepthStrings(t *testing.T) {
	for _, tc := range []struct {
		data string
		max  int
		want string // "" for no violation
	}{
		{`{"a":"[[[[{{{{"}`, 1, ""},
		{`{"a":"x\"[[[[","b":[1]}`, 1, "$.b"},
		{`{"a":"x\\","b":[[1]]}`, 2, "$.b[0]"},
		{`{"a\"b":[[1]]}`, 2, `$["a\"b"][0]`},
		{`["\\\\\"",["\"]"]]`, 1, "$[1]"},
		{`["` + strings.Repeat(`\\`, 1000) + `[",[]]`, 1, "$[1]"},
		{`"unterminated [[[`, 0, ""},
		{`["unterminated \`, 1, ""},
	} {
		v := CheckDepth([]byte(tc.data), tc.max)
		got := ""
		if v != nil {
			got = v.Path
		}
		if got != tc.want {
			t.Errorf("CheckDepth(%s, %d) path = %q, want %q", tc.data, tc.max, got, tc.want)
		}
	}
}

// depthOf is the nesting depth of valid JSON, read with encoding/json's
// tokenizer: the reference CheckDepth is held to.
func depthOf(data []byte) int {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// FuzzCheckDepth: for valid JSON, CheckDepth reports a violation exactly
// when the value nests deeper than the bound.
func FuzzCheckDepth(f *testing.F) {
	for _, s := range []string{`{"a":"[[\"","b":[[{}]]}`, `["\\",["\\\""]]`, `{"k\"":{"x":[1,[2]]}}`, `[]`, `"[{"`} {
		f.Add([]byte(s), 2)
	}
	f.Fuzz(func(t *testing.T, data []byte, bound int) {
		if !json.Valid(data) || bound < 0 || bound > 64 {
			return
		}
		deep := depthOf(data) > bound
		if v := CheckDepth(data, bound); (v != nil) != deep {
			t.Fatalf("CheckDepth(%q, %d) = %v, want a violation: %v", data, bound, v, deep)
		}
	})
}
