package schema_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/internal/schema"
)

// keywordCases are, for every supported keyword, instances on both sides of
// it, written from the JSON Schema 2020-12 validation and core texts. want
// is "" for a valid instance, else the first violation.
var keywordCases = []struct {
	schema string
	cases  [][2]string // instance, want
}{
	// type (validation §6.1.1); integer is a number with a zero fractional part.
	{`{"type":"string"}`, [][2]string{{`"a"`, ""}, {`1`, "$: type"}, {`null`, "$: type"}}},
	{`{"type":"null"}`, [][2]string{{`null`, ""}, {`false`, "$: type"}, {`0`, "$: type"}}},
	{`{"type":"boolean"}`, [][2]string{{`true`, ""}, {`"true"`, "$: type"}}},
	{`{"type":"object"}`, [][2]string{{`{}`, ""}, {`[]`, "$: type"}}},
	{`{"type":"array"}`, [][2]string{{`[]`, ""}, {`{}`, "$: type"}}},
	{`{"type":"number"}`, [][2]string{{`1.5`, ""}, {`-0`, ""}, {`1e400`, ""}, {`"1"`, "$: type"}}},
	{`{"type":"integer"}`, [][2]string{
		{`1`, ""}, {`1.0`, ""}, {`1e2`, ""}, {`-0`, ""}, {`-0.0`, ""}, {`1.5e1`, ""}, {`10e-1`, ""},
		{`123456789012345678901234567890`, ""}, {`1e400`, ""},
		{`1.5`, "$: type"}, {`1e-1`, "$: type"}, {`1.0000000000000000001`, "$: type"}, {`"1"`, "$: type"},
	}},
	{`{"type":["string","null"]}`, [][2]string{{`"a"`, ""}, {`null`, ""}, {`1`, "$: type"}}},
	// enum and const (§6.1.2, §6.1.3): equality is JSON equality, numbers by value.
	{`{"enum":["a",1,null,{"k":[1,2]}]}`, [][2]string{
		{`"a"`, ""}, {`1.0`, ""}, {`1e0`, ""}, {`null`, ""}, {`{"k":[1.0,2]}`, ""},
		{`"b"`, "$: enum"}, {`{"k":[2,1]}`, "$: enum"}, {`true`, "$: enum"}, {`"1"`, "$: enum"},
	}},
	{`{"const":0}`, [][2]string{{`0`, ""}, {`-0`, ""}, {`0.0`, ""}, {`0e5`, ""}, {`false`, "$: const"}, {`1e-400`, "$: const"}}},
	{`{"const":{"a":1,"b":[true]}}`, [][2]string{{`{"b":[true],"a":1}`, ""}, {`{"a":1}`, "$: const"}}},
	{`{"enum":[]}`, [][2]string{{`1`, "$: enum"}}},
	// Numbers (§6.2), compared exactly.
	{`{"minimum":1}`, [][2]string{{`1`, ""}, {`1.0`, ""}, {`0.99999999999999999999`, "$: minimum"}, {`"0"`, ""}}},
	{`{"maximum":9007199254740993}`, [][2]string{{`9007199254740993`, ""}, {`9007199254740994`, "$: maximum"}, {`9.007199254740993e15`, ""}}},
	{`{"exclusiveMinimum":0}`, [][2]string{{`1e-400`, ""}, {`0`, "$: exclusiveMinimum"}, {`-0`, "$: exclusiveMinimum"}}},
	{`{"exclusiveMaximum":-1.5}`, [][2]string{{`-2`, ""}, {`-1.5`, "$: exclusiveMaximum"}, {`-15e-1`, "$: exclusiveMaximum"}}},
	{`{"minimum":-1e400}`, [][2]string{{`-1e399`, ""}, {`-1e401`, "$: minimum"}}},
	{`{"maximum":1e999999999999999999999}`, [][2]string{{`1e400`, ""}}},
	{`{"multipleOf":0.1}`, [][2]string{{`0.3`, ""}, {`3`, ""}, {`1e400`, ""}, {`0`, ""}, {`-0.7`, ""}, {`0.35`, "$: multipleOf"}, {`1e-400`, "$: multipleOf"}}},
	{`{"multipleOf":3}`, [][2]string{{`9`, ""}, {`3e1000`, ""}, {`99999999999999999999999999999999999999`, ""}, {`10`, "$: multipleOf"}, {`1.5`, "$: multipleOf"}, {`1e999999999999`, "$: multipleOf"}}},
	{`{"multipleOf":1e-300}`, [][2]string{{`1e-299`, ""}, {`1e-301`, "$: multipleOf"}}},
	// Strings (§6.3): lengths in code points.
	{`{"minLength":2}`, [][2]string{{`"ab"`, ""}, {`"é"`, "$: minLength"}, {`"😀"`, "$: minLength"}, {`1`, ""}}},
	{`{"maxLength":2}`, [][2]string{{`"éé"`, ""}, {`"😀😀"`, ""}, {`"abc"`, "$: maxLength"}}},
	{`{"maxLength":0}`, [][2]string{{`""`, ""}, {`"a"`, "$: maxLength"}}},
	{`{"pattern":"^a+$"}`, [][2]string{{`"aaa"`, ""}, {`"ab"`, "$: pattern"}, {`1`, ""}}},
	{`{"pattern":"b"}`, [][2]string{{`"abc"`, ""}, {`"ac"`, "$: pattern"}}},
	// Arrays (§6.4, core §10.3.1).
	{`{"minItems":1,"maxItems":2}`, [][2]string{{`[1]`, ""}, {`[]`, "$: minItems"}, {`[1,2,3]`, "$: maxItems"}, {`"x"`, ""}}},
	{`{"uniqueItems":true}`, [][2]string{{`[1,"1",[1]]`, ""}, {`[1,1.0]`, "$: uniqueItems"}, {`[{"a":1,"b":2},{"b":2,"a":1}]`, "$: uniqueItems"}, {`[0,-0]`, "$: uniqueItems"}}},
	{`{"uniqueItems":false}`, [][2]string{{`[1,1]`, ""}}},
	{`{"items":{"type":"integer"}}`, [][2]string{{`[1,2]`, ""}, {`[]`, ""}, {`[1,"a",true]`, "$[1]: type"}}},
	{`{"prefixItems":[{"type":"string"},{"type":"integer"}]}`, [][2]string{{`["a",1,null]`, ""}, {`["a"]`, ""}, {`[1]`, "$[0]: type"}}},
	{`{"prefixItems":[{}],"items":false}`, [][2]string{{`[1]`, ""}, {`[1,2]`, "$[1]: items"}}},
	{`{"prefixItems":[{}],"items":{"type":"string"}}`, [][2]string{{`[1,"a"]`, ""}, {`[1,2]`, "$[1]: type"}}},
	// Objects (§6.5, core §10.3.2).
	{`{"required":["b","a"]}`, [][2]string{{`{"a":1,"b":2}`, ""}, {`{"b":1}`, "$.a: required"}, {`{}`, "$.a: required"}, {`[]`, ""}}},
	{`{"minProperties":1,"maxProperties":1}`, [][2]string{{`{"a":1}`, ""}, {`{}`, "$: minProperties"}, {`{"a":1,"b":2}`, "$: maxProperties"}}},
	{`{"dependentRequired":{"a":["b","c"]}}`, [][2]string{{`{}`, ""}, {`{"b":1}`, ""}, {`{"a":1,"b":1,"c":1}`, ""}, {`{"a":1,"c":1}`, "$.b: dependentRequired"}}},
	{`{"properties":{"a":{"type":"string"},"b":false}}`, [][2]string{{`{"a":"x","c":1}`, ""}, {`{"a":1}`, "$.a: type"}, {`{"b":1}`, "$.b: false"}}},
	{`{"patternProperties":{"^x-":{"type":"integer"}},"additionalProperties":false}`, [][2]string{{`{"x-a":1}`, ""}, {`{"x-a":"s"}`, "$[\"x-a\"]: type"}, {`{"y":1}`, "$.y: additionalProperties"}}},
	{`{"properties":{"a":{}},"additionalProperties":{"type":"string"}}`, [][2]string{{`{"a":1,"b":"x"}`, ""}, {`{"b":1}`, "$.b: type"}}},
	{`{"propertyNames":{"maxLength":2}}`, [][2]string{{`{"ab":1}`, ""}, {`{"abc":1}`, "$.abc: propertyNames"}}},
	// Applicators (core §10.2).
	{`{"allOf":[{"minimum":1},{"maximum":2}]}`, [][2]string{{`1.5`, ""}, {`0`, "$: minimum"}, {`3`, "$: maximum"}}},
	{`{"anyOf":[{"type":"string"},{"minimum":2}]}`, [][2]string{{`"a"`, ""}, {`3`, ""}, {`1`, "$: anyOf"}}},
	{`{"oneOf":[{"type":"integer"},{"minimum":2}]}`, [][2]string{{`1`, ""}, {`2.5`, ""}, {`3`, "$: oneOf"}, {`1.5`, "$: oneOf"}}},
	{`{"not":{"type":"string"}}`, [][2]string{{`1`, ""}, {`"a"`, "$: not"}}},
	{`{"if":{"type":"integer"},"then":{"minimum":1},"else":{"type":"string"}}`, [][2]string{{`2`, ""}, {`"a"`, ""}, {`0`, "$: minimum"}, {`1.5`, "$: type"}}},
	{`{"if":{"type":"integer"},"then":{"minimum":1}}`, [][2]string{{`"a"`, ""}, {`0`, "$: minimum"}}},
	{`{"then":{"minimum":1},"else":{"maximum":0}}`, [][2]string{{`5`, ""}, {`-5`, ""}}},
	{`true`, [][2]string{{`{"any":[1]}`, ""}}},
	{`false`, [][2]string{{`null`, "$: false"}}},
	// References (core §8.2.3).
	{`{"$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}}}`, [][2]string{{`{"a":"x"}`, ""}, {`{"a":1}`, "$.a: type"}}},
	{`{"definitions":{"s":{"type":"string"}},"$ref":"#/definitions/s"}`, [][2]string{{`"x"`, ""}, {`1`, "$: type"}}},
	{`{"$defs":{"a b":{"type":"string"},"c/d":{"type":"integer"}},"properties":{"x":{"$ref":"#/$defs/a%20b"},"y":{"$ref":"#/$defs/c~1d"}}}`, [][2]string{{`{"x":"s","y":1}`, ""}, {`{"x":1}`, "$.x: type"}, {`{"y":"s"}`, "$.y: type"}}},
	{`{"$defs":{"s":{"$anchor":"str","type":"string"}},"$ref":"#str"}`, [][2]string{{`"x"`, ""}, {`1`, "$: type"}}},
	{`{"$id":"https://example.com/s.json","$defs":{"n":{"type":"null"}},"$ref":"https://example.com/s.json#/$defs/n"}`, [][2]string{{`null`, ""}, {`1`, "$: type"}}},
	{`{"$ref":"#/$defs/n","maximum":5,"$defs":{"n":{"minimum":1}}}`, [][2]string{{`3`, ""}, {`0`, "$: minimum"}, {`6`, "$: maximum"}}},
	{`{"type":"array","items":{"$ref":"#"}}`, [][2]string{{`[[],[[]]]`, ""}, {`[[1]]`, "$[0][0]: type"}}},
	{`{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, [][2]string{{`1`, "$: $ref"}}},
	// Annotations are accepted and ignored.
	{`{"$schema":"https://json-schema.org/draft/2020-12/schema","$comment":"c","title":"t","description":"d","default":[1],"examples":[1,"x"],"deprecated":true,"readOnly":false,"writeOnly":false,"contentMediaType":"text/plain","contentEncoding":"base64","format":"email"}`, [][2]string{{`"not an email"`, ""}, {`1`, ""}}},
	{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"integer"}`, [][2]string{{`1`, ""}, {`"1"`, "$: type"}}},
}

func TestKeywords(t *testing.T) {
	for _, kc := range keywordCases {
		s := mustCompile(t, kc.schema)
		for _, c := range kc.cases {
			got := ""
			if v := s.Validate(decode(t, c[0])); v != nil {
				got = v.String()
			}
			if got != c[1] {
				t.Errorf("schema %s: Validate(%s) = %q, want %q", kc.schema, c[0], got, c[1])
			}
		}
	}
}

// TestCompileRejectsKeywords: a wrong keyword value, an unknown keyword and
// an unsupported construct are compile errors naming where they are.
func TestCompileRejectsKeywords(t *testing.T) {
	for doc, pointer := range map[string]string{
		`3`:                                    "",
		`{"requried":["a"]}`:                   "",
		`{"properties":{"a":{"minimum":"1"}}}`: "/properties/a",
		`{"type":[]}`:                          "",
		`{"type":["string","string"]}`:         "",
		`{"enum":{}}`:                          "",
		`{"required":["a","a"]}`:               "",
		`{"required":[1]}`:                     "",
		`{"minItems":1.5}`:                     "",
		`{"maxLength":-1}`:                     "",
		`{"multipleOf":0}`:                     "",
		`{"multipleOf":-2}`:                    "",
		`{"uniqueItems":"yes"}`:                "",
		`{"allOf":[]}`:                         "",
		`{"anyOf":{}}`:                         "",
		`{"oneOf":[{"type":"x"}]}`:             "/oneOf/0",
		`{"items":[{}]}`:                       "",
		`{"additionalItems":false}`:            "",
		`{"dependencies":{}}`:                  "",
		`{"unevaluatedProperties":false}`:      "",
		`{"$dynamicRef":"#a"}`:                 "",
		`{"$schema":"http://json-schema.org/draft-04/schema#"}`:                      "",
		`{"$schema":"https://json-schema.org/draft/2019-09/schema"}`:                 "",
		`{"properties":{"a":{"$schema":"http://json-schema.org/draft-07/schema#"}}}`: "/properties/a",
		`{"properties":{"a":{"$id":"https://example.com/a"}}}`:                       "/properties/a",
		`{"$id":"https://example.com/s#frag"}`:                                       "",
		`{"$anchor":"1bad"}`:                                                         "",
		`{"$defs":{"a":{"$anchor":"x"},"b":{"$anchor":"x"}}}`:                        "/$defs/b",
		`{"$ref":"#/$defs/missing"}`:                                                 "",
		`{"$ref":"#nowhere"}`:                                                        "",
		`{"$ref":"#/properties"}`:                                                    "",
		`{"$ref":"other.json#/a"}`:                                                   "",
		`{"pattern":"(?<=a)b"}`:                                                      "",
		`{"patternProperties":{"(":{}}}`:                                             "",
		`{"format":1}`:                                                               "",
		`{"x-ext":1}`:                                                                "",
	} {
		_, err := schema.Compile([]byte(doc))
		var ce *schema.CompileError
		if !errors.As(err, &ce) {
			t.Errorf("Compile(%s) = %v, want a *CompileError", doc, err)
			continue
		}
		if ce.Pointer != pointer {
			t.Errorf("Compile(%s) error at %q (%v), want at %q", doc, ce.Pointer, err, pointer)
		}
	}
}

func TestAllowAnnotations(t *testing.T) {
	const doc = `{"example":{"any":"thing"},"x-note":[1],"properties":{"a":{"x-other":true,"type":"string"}}}`
	if _, err := schema.Compile([]byte(doc)); err == nil {
		t.Fatalf("Compile(%s) without options succeeded", doc)
	}
	s, err := schema.Compile([]byte(doc), schema.AllowAnnotations("example"), schema.AllowAnnotationPrefix("x-"))
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Validate(decode(t, `{"a":1}`)); v == nil || v.String() != "$.a: type" {
		t.Errorf("Validate = %v, want $.a: type", v)
	}
}

func TestResolve(t *testing.T) {
	s := mustCompile(t, `{"$defs":{"A":{"type":"string"},"B":{"$anchor":"b","type":"integer"}}}`)
	a, err := s.Resolve("#/$defs/A")
	if err != nil {
		t.Fatal(err)
	}
	if v := a.Validate(json.Number("1")); v == nil || v.String() != "$: type" {
		t.Errorf("Validate against #/$defs/A = %v, want $: type", v)
	}
	b, err := s.Resolve("#b")
	if err != nil {
		t.Fatal(err)
	}
	if v := b.Validate(json.Number("1")); v != nil {
		t.Errorf("Validate against #b = %v, want nil", v)
	}
	for _, ref := range []string{"#/$defs/C", "#/$defs", "#c", "x.json#/a"} {
		if _, err := s.Resolve(ref); err == nil {
			t.Errorf("Resolve(%q) succeeded", ref)
		}
	}
}

// TestFirstViolationOrder: of all violations the one first by (path,
// keyword) is reported, whatever the evaluation order.
func TestFirstViolationOrder(t *testing.T) {
	s := mustCompile(t, `{"properties":{"b":{"type":"string","minLength":5,"pattern":"^x"},"a":{"allOf":[{"maximum":1},{"minimum":10}]}},"required":["zz"]}`)
	for range 20 {
		if v := s.Validate(decode(t, `{"b":"yy","a":5}`)); v == nil || v.String() != "$.a: maximum" {
			t.Fatalf("Validate = %v, want $.a: maximum", v)
		}
		if v := s.Validate(decode(t, `{"b":"yy","c":[]}`)); v == nil || v.String() != "$.b: minLength" {
			t.Fatalf("Validate = %v, want $.b: minLength", v)
		}
	}
}

// TestValidateRejectsNonJSON: Go values that JSON cannot hold are never
// valid where a type, enum or const is asked for.
func TestValidateRejectsNonJSON(t *testing.T) {
	s := mustCompile(t, `{"type":["number","string","object"]}`)
	for _, v := range []any{json.Number("1x"), json.Number(""), struct{}{}, map[string]string{}} {
		if got := s.Validate(v); got == nil || got.Keyword != "type" {
			t.Errorf("Validate(%#v) = %v, want a type violation", v, got)
		}
	}
	e := mustCompile(t, `{"enum":[1]}`)
	if got := e.Validate(json.Number("01")); got == nil {
		t.Error("Validate(01) against enum [1] succeeded")
	}
}

func FuzzValidate(f *testing.F) {
	for _, kc := range keywordCases {
		for _, c := range kc.cases {
			f.Add(kc.schema, c[0])
		}
	}
	f.Add(`{"multipleOf":1e-999999999999999}`, `1e999999999999999`)
	f.Fuzz(func(t *testing.T, doc, instance string) {
		s, err := schema.Compile([]byte(doc))
		if err != nil {
			return
		}
		v, err := schema.Decode([]byte(instance))
		if err != nil {
			return
		}
		got := s.Validate(v)
		if got != nil && (len(got.Path) > schema.MaxPathBytes || !strings.HasPrefix(got.Path, "$") || got.Keyword == "") {
			t.Errorf("Validate = %+v: a malformed violation", got)
		}
	})
}
