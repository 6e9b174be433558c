package schemacheck

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTranslatePattern(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{`\S`, []string{"a", " a", "\u0085", "\u200b"}, []string{"", " ", "\t\n\v\f\r", "\u00a0", "\u1680", "\u2000\u200a", "\u2028\u2029", "\u202f\u205f\u3000", "\ufeff"}},
		{`^\s+$`, []string{" ", "\u00a0\v", "\ufeff"}, []string{"", "a", " a"}},
		{`^[\sx]+$`, []string{"x x", "\u3000x"}, []string{"y"}},
		{`^a.b$`, []string{"axb", "a\u00a0b"}, []string{"a\nb", "a\rb", "a\u2028b", "ab"}},
		{`^[.]$`, []string{"."}, []string{"x"}},
		{`^\d+\.\w$`, []string{"12.a"}, []string{"١٢.a", "12x"}},
		{`^[^a]$`, []string{"b"}, []string{"a"}},
		{`\\S`, []string{`\S`}, []string{"x"}},
	}
	for _, tt := range tests {
		re2, err := TranslatePattern(tt.pattern)
		if err != nil {
			t.Errorf("TranslatePattern(%q) error: %v", tt.pattern, err)
			continue
		}
		re := regexp.MustCompile(re2)
		for _, s := range tt.match {
			if !re.MatchString(s) {
				t.Errorf("pattern %q (RE2 %q) does not match %q, want a match", tt.pattern, re2, s)
			}
		}
		for _, s := range tt.noMatch {
			if re.MatchString(s) {
				t.Errorf("pattern %q (RE2 %q) matches %q, want no match", tt.pattern, re2, s)
			}
		}
	}
}

func TestTranslatePatternErrors(t *testing.T) {
	for _, p := range []string{`a\`, `[\S]`, `[]`, `[^]`, `(?=a)`, `(a)\1`, `[a`} {
		if got, err := TranslatePattern(p); err == nil {
			t.Errorf("TranslatePattern(%q) = %q, want an error", p, got)
		}
	}
}

func TestCompileRejects(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","format":"x"}`,
		`{"type":["string","null"]}`,
		`{"type":"thing"}`,
		`{"additionalProperties":{"type":"string"}}`,
		`{"minLength":1.5}`,
		`{"minLength":-1}`,
		`{"pattern":"(?=x)"}`,
		`{"properties":{"a":{"$ref":"#"}}}`,
		`{"properties":{"a":true}}`,
		`{"required":[1]}`,
		`[]`,
	} {
		if _, err := Compile([]byte(s)); err == nil {
			t.Errorf("Compile(%s) succeeded, want an error", s)
		}
	}
}

const closed = `{"type":"object","additionalProperties":false,"required":["b","a"],"properties":{
	"a":{"type":"string","minLength":2,"pattern":"\\S"},
	"b":{"type":"object","properties":{"c":{"type":"integer"}}},
	"na me":{"type":"number"}}}`

func TestCheck(t *testing.T) {
	s, err := Compile([]byte(closed))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in   string
		want []Violation
	}{
		{`{"a":"xy","b":{}}`, nil},
		{`{"a":"xy","b":{"c":3.0},"na me":1.5}`, nil},
		{`[]`, []Violation{{"$", "type"}}},
		{`null`, []Violation{{"$", "type"}}},
		{`{}`, []Violation{{"$", "required"}}},
		{`{"a":" ","x":1,"y":2}`, []Violation{{"$", "additionalProperties"}, {"$", "required"}, {"$.a", "minLength"}, {"$.a", "pattern"}}},
		{`{"a":"\u00a0\u00a0","b":{"c":1.5}}`, []Violation{{"$.a", "pattern"}, {"$.b.c", "type"}}},
		{`{"a":"xy","b":[],"na me":"1"}`, []Violation{{"$.b", "type"}, {`$["na me"]`, "type"}}},
		{`{"a":1,"b":{"c":"1"}}`, []Violation{{"$.a", "type"}, {"$.b.c", "type"}}},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.in), &v); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, s.Check(v)); diff != "" {
			t.Errorf("Check(%s) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestCheckJSONNumbers(t *testing.T) {
	s, err := Compile([]byte(`{"properties":{"i":{"type":"integer"},"n":{"type":"number"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := s.Check(map[string]any{"i": json.Number("1.5"), "n": json.Number("1e400")})
	if diff := cmp.Diff([]Violation{{"$.i", "type"}}, got); diff != "" {
		t.Errorf("Check mismatch (-want +got):\n%s", diff)
	}
	if got := s.Check(map[string]any{"i": json.Number("12345678901234567890"), "n": json.Number("2")}); got != nil {
		t.Errorf("Check(big integer) = %v, want no violations", got)
	}
}

func TestForRE2(t *testing.T) {
	out, err := ForRE2([]byte(closed))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	got := m["properties"].(map[string]any)["a"].(map[string]any)["pattern"]
	want, _ := TranslatePattern(`\S`)
	if got != want {
		t.Errorf("ForRE2 pattern = %q, want %q", got, want)
	}
	if _, err := ForRE2([]byte(`{"format":"x"}`)); err == nil {
		t.Errorf("ForRE2 accepted an unsupported keyword")
	}
}
