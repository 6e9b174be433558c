package schema_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openprogram/openprogram/internal/schema"
)

const objectSchema = `{
	"type": "object",
	"properties": {
		"id": {"type": "string", "minLength": 1, "pattern": "\\S"},
		"n": {"type": "integer", "minimum": 0},
		"tags": {"type": "array", "items": {"type": "string", "maxLength": 3}},
		"sub": {"type": "object", "properties": {"x": {"type": "boolean"}}, "required": ["x"], "additionalProperties": false},
		"either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
		"ref": {"$ref": "#/$defs/short"},
		"a_first": {}, "b_second": {}
	},
	"required": ["id", "b_second", "a_first"],
	"additionalProperties": false,
	"$defs": {"short": {"type": "string", "maxLength": 2}}
}`

func mustCompile(t testing.TB, doc string) *schema.Schema {
	t.Helper()
	s, err := schema.Compile([]byte(doc))
	if err != nil {
		t.Fatalf("Compile(%s) error: %v", doc, err)
	}
	return s
}

func decode(t testing.TB, data string) any {
	t.Helper()
	v, err := schema.Decode([]byte(data))
	if err != nil {
		t.Fatalf("Decode(%s): %v", data, err)
	}
	return v
}

func TestValidateFirstViolation(t *testing.T) {
	s := mustCompile(t, objectSchema)
	const rest = `"a_first":1,"b_second":2`
	const ok = `"id":"x",` + rest
	tests := []struct{ instance, want string }{
		{`{` + ok + `}`, ""},
		{`[]`, "$: type"},
		{`null`, "$: type"},
		// required names the missing property; the first by name wins.
		{`{"id":"x"}`, "$.a_first: required"},
		{`{"id":"x","a_first":1}`, "$.b_second: required"},
		// additionalProperties names the unexpected property.
		{`{` + ok + `,"zz":1}`, "$.zz: additionalProperties"},
		{`{` + ok + `,"na me":1}`, `$["na me"]: additionalProperties`},
		{`{` + ok + `,"":1}`, `$[""]: additionalProperties`},
		// Ordered by path first: $.a_first < $.id < $.zz.
		{`{"zz":1,"id":""}`, "$.a_first: required"},
		{`{"a_first":1,"b_second":2,"id":"","zz":1}`, "$.id: minLength"},
		// Then by keyword.
		{`{` + rest + `,"id":""}`, "$.id: minLength"},
		{`{` + rest + `,"id":"\u00a0"}`, "$.id: pattern"},
		{`{` + ok + `,"n":1.5}`, "$.n: type"},
		{`{` + ok + `,"n":-1}`, "$.n: minimum"},
		{`{` + ok + `,"n":12345678901234567890123}`, ""},
		{`{` + ok + `,"tags":["ok","long"]}`, "$.tags[1]: maxLength"},
		{`{` + ok + `,"sub":{}}`, "$.sub.x: required"},
		{`{` + ok + `,"sub":{"x":true,"y":1}}`, "$.sub.y: additionalProperties"},
		{`{` + ok + `,"either":true}`, "$.either: anyOf"},
		{`{` + ok + `,"ref":"abc"}`, "$.ref: maxLength"},
	}
	for _, tt := range tests {
		v := s.Validate(decode(t, tt.instance))
		got := ""
		if v != nil {
			got = v.String()
		}
		if got != tt.want {
			t.Errorf("Validate(%s) = %q, want %q", tt.instance, got, tt.want)
		}
	}
}

func TestValidateFloat64Instances(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer"}}}`)
	if v := s.Validate(map[string]any{"n": 3.0}); v != nil {
		t.Errorf("Validate(n=3.0) = %v, want nil", v)
	}
	if v := s.Validate(map[string]any{"n": 3.5}); v == nil || v.String() != "$.n: type" {
		t.Errorf("Validate(n=3.5) = %v, want $.n: type", v)
	}
}

func TestValidateDoesNotMutate(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"a":{"default":5},"b":{"type":"array","items":{"type":"integer"}}},"additionalProperties":false}`)
	in := decode(t, `{"b":[1,"x"],"c":{}}`)
	before, _ := json.Marshal(in)
	_ = s.Validate(in)
	after, _ := json.Marshal(in)
	if string(before) != string(after) {
		t.Errorf("Validate changed its input from %s to %s", before, after)
	}
}

func TestViolationPathIsClipped(t *testing.T) {
	s := mustCompile(t, `{"type":"object","additionalProperties":false}`)
	long := strings.Repeat("é", 10000)
	v := s.Validate(map[string]any{long: 1})
	if v == nil {
		t.Fatal("Validate accepted an additional property")
	}
	if len(v.Path) > schema.MaxPathBytes || !utf8.ValidString(v.Path) || !strings.HasSuffix(v.Path, `..."]`) {
		t.Errorf("path of a %d-byte name = %q (%d bytes), want a clipped excerpt", len(long), v.Path, len(v.Path))
	}

	deep := `{"type":"object","additionalProperties":{"$ref":"#"},"properties":{}}`
	d := mustCompile(t, deep)
	var inst any = map[string]any{"leaf": map[string]any{}}
	for range 200 {
		inst = map[string]any{strings.Repeat("k", 40): inst}
	}
	d2 := mustCompile(t, `{"type":"object","additionalProperties":{"$ref":"#"},"properties":{"leaf":{"type":"integer"}}}`)
	if v := d.Validate(inst); v != nil {
		t.Fatalf("Validate(deep) = %v, want nil", v)
	}
	v = d2.Validate(inst)
	if v == nil || len(v.Path) > schema.MaxPathBytes || !strings.HasSuffix(v.Path, "...") {
		t.Errorf("deep path = %v, want at most %d bytes ending in ...", v, schema.MaxPathBytes)
	}
}

func TestCompileRejects(t *testing.T) {
	for _, doc := range []string{
		``,
		`{`,
		`{} {}`,
		`{"type":"thing"}`,
		`{"minLength":-1}`,
		`{"properties":{"a":{"$ref":"#/$defs/missing"}}}`,
		`{"$ref":"https://example.com/s.json"}`,
		`{"$ref":"file:///etc/passwd"}`,
		`{"pattern":"(?=a)"}`,
		`{"pattern":"[\\S]"}`,
	} {
		if _, err := schema.Compile([]byte(doc)); err == nil {
			t.Errorf("Compile(%s) = nil error, want an error", doc)
		}
	}
}

func TestCompileECMAPattern(t *testing.T) {
	s := mustCompile(t, `{"type":"string","pattern":"\\S"}`)
	for in, want := range map[string]string{"a": "", " ": "$: pattern", "\u00a0\u3000": "$: pattern", "\u200b": ""} {
		got := ""
		if v := s.Validate(in); v != nil {
			got = v.String()
		}
		if got != want {
			t.Errorf("Validate(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestValidateBoundsNumbers: a number literal past MaxNumberBytes is refused
// at once (exact comparison of an n-digit number costs O(n²)); shorter ones
// are checked exactly.
func TestValidateBoundsNumbers(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"list":{"type":"array","items":{"type":"integer"}}}}`)
	ok := json.Number(strings.Repeat("9", schema.MaxNumberBytes))
	if v := s.Validate(map[string]any{"list": []any{ok}}); v != nil {
		t.Errorf("Validate(%d-digit integer) = %v, want nil", len(ok), v)
	}
	long := json.Number(strings.Repeat("9", 1<<20))
	v := s.Validate(map[string]any{"list": []any{json.Number("1"), long}, "other": long})
	if v == nil || v.String() != "$.list[1]: type" {
		t.Errorf("Validate(1 MiB number) = %v, want $.list[1]: type", v)
	}
}

func TestEscapeTokenResolvesOddNames(t *testing.T) {
	s, err := schema.Compile([]byte(`{"$defs": {"a/b~c": {"type": "string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := schema.EscapeToken("a/b~c"); got != "a~1b~0c" {
		t.Errorf("EscapeToken = %q, want a~1b~0c", got)
	}
	d, err := s.Resolve("#/$defs/" + schema.EscapeToken("a/b~c"))
	if err != nil {
		t.Fatal(err)
	}
	if v := d.Validate(1.0); v == nil || v.Keyword != "type" {
		t.Errorf("Validate(1) = %v, want a type violation", v)
	}
}
