package tool

import (
	"encoding/json"
	"testing"
)

// builtinLikeSchemas are input schemas in the style of the built-in tools
// (copies of three of them), for the tests and the benchmark.
var builtinLikeSchemas = []string{
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"substring":{"type":"string","minLength":1,"maxLength":1000,"description":"Literal text to find (not a regular expression)."},"path_prefix":{"type":"string","maxLength":512,"description":"Only paths starting with this prefix."},"case_sensitive":{"type":"boolean","description":"Match case exactly. Default false."},"limit":{"type":"integer","minimum":1,"maximum":1000,"description":"Maximum matching lines. Default 100."}},"required":["substring"],"additionalProperties":false}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"path":{"type":"string","minLength":1,"description":"File to edit, absolute or relative to the working directory."},"old_string":{"type":"string","minLength":1,"description":"Exact text to replace. It must occur exactly once unless replace_all is true."},"new_string":{"type":"string","description":"Replacement text."},"replace_all":{"type":"boolean","description":"Replace every occurrence. Default false."}},"required":["path","old_string","new_string"],"additionalProperties":false}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{},"additionalProperties":false}`,
}

// schemaCases are tool input schemas and whether compileSchema accepts them.
var schemaCases = []struct {
	schema string
	ok     bool
}{
	{`{"type":"object"}`, true},
	{`{"type":"object","properties":{"a":true,"b":false},"x-note":{"n":1e300}}`, true},
	{`{"type":"object","properties":{"a":{"type":["string","null"],"enum":["x",null,1.5e308]}}}`, true},
	{`{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-z]+$","minLength":2147483647}}}`, true},
	{`{"type":"object","allOf":[{"if":{"required":["a"]},"then":{"minProperties":1},"else":{"not":{}}}],"dependentRequired":{"a":["b"]}}`, true},
	{`{"type":"object","patternProperties":{"^x-":{"type":"integer","multipleOf":0.5}},"propertyNames":{"maxLength":8}}`, true},
	{`{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, true},
	{`{"type":"object","$id":"https://example.com/s","properties":{"a":{"$anchor":"a"}}}`, true},
	{`{"type":"object","properties":{"a":{"type":"string","pattern":"^\\S+$"}},"patternProperties":{"^x-":{}}}`, true},
	// Numbers are exact: large values and integers written as 1.0 are fine.
	{`{"type":"object","properties":{"a":{"type":"string","maxLength":2147483648}}}`, true},
	{`{"type":"object","properties":{"a":{"enum":[1e400]}}}`, true},
	{`{"type":"object","properties":{"a":{"const":-1e400}}}`, true},
	{`{"type":"object","examples":[{"n":1e999}]}`, true},
	{`{"type":"object","x-big":1e400}`, true},
	{`{"type":"object","minLength":1.0}`, true},
	// A repeated key: the last one counts.
	{`{"type":"object","properties":{"0":{"type":"string","maxLength":"","maxLength":0}}}`, true},
	{`{"type":"object","properties":{"a":{},"a":{}},"required":["a"],"required":["b"]}`, true},
	// Patterns are ECMA-262: constructs without an RE2 translation fail.
	{`{"type":"object","properties":{"a":{"type":"string","pattern":"[\\S]"}}}`, false},
	{`{"type":"object","patternProperties":{"[]a]":{}}}`, false},
	{`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, false},
	{`{"type":"object","properties":{"a":{"$anchor":"x"},"b":{"$anchor":"x"}}}`, false},
	{`{"type":"object","$id":"https://example.com/s#frag"}`, false},
	{`{"type":"object","$vocabulary":{"https://example.com/v":"yes"}}`, false},
	{`{"type":"object","unevaluatedProperties":false}`, false},
	{`{"type":"object","properties":{"a":{"$schema":"http://json-schema.org/draft-07/schema#"}}}`, false},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, false},
	{`{"type":"object"} }`, false},
	{`{"type":"object"} {}`, false},
	{`{"type":"object","properties":{"a":null}}`, false},
	{`{"type":"object","items":[{}]}`, false},
}

func TestCompileSchemaCases(t *testing.T) {
	for _, c := range schemaCases {
		if _, err := compileSchema(json.RawMessage(c.schema)); (err == nil) != c.ok {
			t.Errorf("compileSchema(%s) = %v, want ok=%v", c.schema, err, c.ok)
		}
	}
	for _, s := range builtinLikeSchemas {
		if _, err := compileSchema(json.RawMessage(s)); err != nil {
			t.Errorf("compileSchema(built-in style %s) = %v", s, err)
		}
	}
}

// FuzzCompileSchema: compiling any text either fails or yields a schema
// that validates arguments without panicking.
func FuzzCompileSchema(f *testing.F) {
	for _, c := range schemaCases {
		f.Add([]byte(c.schema), []byte(`{"a":"x","b":[1,2.5],"x-a":1}`))
	}
	for _, s := range builtinLikeSchemas {
		f.Add([]byte(s), []byte(`{"substring":"x","limit":3}`))
	}
	f.Fuzz(func(t *testing.T, raw, args []byte) {
		rs, err := compileSchema(raw)
		if err != nil {
			return
		}
		_ = validateCompiled("fuzz", rs, args)
	})
}

// BenchmarkRegisterSchema measures Register's schema work: compiling a
// schema not yet cached.
func BenchmarkRegisterSchema(b *testing.B) {
	raws := make([]json.RawMessage, len(builtinLikeSchemas))
	for i, s := range builtinLikeSchemas {
		raws[i] = json.RawMessage(s)
	}
	b.Run("admit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, raw := range raws {
				if _, err := compileSchema(raw); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
