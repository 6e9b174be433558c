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

// admitCases are schemas on both sides of the lazily compiled subset.
var admitCases = []string{
	`{"type":"object"}`,
	`{"type":"object","properties":{"a":true,"b":false},"x-note":{"n":1e300}}`,
	`{"type":"object","properties":{"a":{"type":["string","null"],"enum":["x",null,1.5e308]}}}`,
	`{"type":"object","properties":{"a":{"type":"string","pattern":"^[a-z]+$","minLength":2147483647}}}`,
	`{"type":"object","allOf":[{"if":{"required":["a"]},"then":{"minProperties":1},"else":{"not":{}}}],"dependentRequired":{"a":["b"]}}`,
	`{"type":"object","patternProperties":{"^x-":{"type":"integer","multipleOf":0.5}},"propertyNames":{"maxLength":8}}`,
	// Outside the subset: compiled at registration, and accepted.
	`{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`,
	`{"type":"object","$id":"https://example.com/s","properties":{"a":{"$anchor":"a"}}}`,
	// Patterns: compiled at registration (ECMA-262 translation).
	`{"type":"object","properties":{"a":{"type":"string","pattern":"^\\S+$"}},"patternProperties":{"^x-":{}}}`,
	`{"type":"object","properties":{"a":{"type":"string","pattern":"[\\S]"}}}`,
	`{"type":"object","patternProperties":{"[]a]":{}}}`,
	// Outside the subset and rejected only by compiling.
	`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`,
	`{"type":"object","properties":{"a":{"$anchor":"x"},"b":{"$anchor":"x"}}}`,
	`{"type":"object","$id":"https://example.com/s#frag"}`,
	`{"type":"object","$vocabulary":{"https://example.com/v":"yes"}}`,
	`{"type":"object","properties":{"a":{"type":"string","maxLength":2147483648}}}`,
	`{"type":"object","properties":{"a":{"enum":[1e400]}}}`,
	`{"type":"object","properties":{"a":{"const":-1e400}}}`,
	`{"type":"object","examples":[{"n":1e999}]}`,
	`{"type":"object","x-big":1e400}`,
	// A repeated key: the structural check and the compiler both see the last.
	`{"type":"object","properties":{"0":{"type":"string","maxLength":"","maxLength":0}}}`,
	`{"type":"object","properties":{"a":{},"a":{}},"required":["a"],"required":["b"]}`,
	// Rejected by the structural check.
	`{"type":"object"} }`,
	`{"type":"object"} {}`,
	`{"type":"object","properties":{"a":null}}`,
	`{"type":"object","items":[{}]}`,
	`{"type":"object","definitions":{}}`,
	`{"type":"object","minLength":1.0}`,
}

// checkAdmit fails t unless admitSchema agrees with compileSchema, and a
// schema left to compile lazily compiles.
func checkAdmit(t *testing.T, raw []byte) {
	t.Helper()
	_, compileErr := compileSchema(raw)
	if err := admitSchema(raw); (err != nil) != (compileErr != nil) {
		t.Errorf("admitSchema(%s) = %v, compileSchema error %v", raw, err, compileErr)
	}
	if _, lazy, err := checkSchemaText(raw); err == nil && lazy && compileErr != nil {
		t.Errorf("schema %s is in the lazily compiled subset but does not compile: %v", raw, compileErr)
	}
}

func TestAdmitSchemaAgreesWithCompile(t *testing.T) {
	for _, s := range append(admitCases, builtinLikeSchemas...) {
		checkAdmit(t, []byte(s))
	}
	for _, s := range builtinLikeSchemas {
		_, lazy, err := checkSchemaText(json.RawMessage(s))
		if err != nil || !lazy {
			t.Errorf("built-in style schema %s is not compiled lazily (err %v)", s, err)
		}
	}
}

func FuzzAdmitSchema(f *testing.F) {
	for _, s := range append(admitCases, builtinLikeSchemas...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { checkAdmit(t, raw) })
}

// BenchmarkRegisterSchema compares Register's schema check with compiling
// the schema (what Register did before), for schemas not yet cached.
func BenchmarkRegisterSchema(b *testing.B) {
	raws := make([]json.RawMessage, len(builtinLikeSchemas))
	for i, s := range builtinLikeSchemas {
		raws[i] = json.RawMessage(s)
	}
	b.Run("admit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, raw := range raws {
				if err := admitSchema(raw); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("compile", func(b *testing.B) {
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
