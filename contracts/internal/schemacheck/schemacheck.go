// Package schemacheck reports every violation of a small JSON Schema 2020-12
// subset as a (path, keyword) pair, and translates ECMA-262 patterns (the
// dialect JSON Schema specifies) into Go's RE2 syntax.
//
// The contracts package lets github.com/google/jsonschema-go decide whether
// arguments are valid. That validator stops at the first failure it meets,
// in map iteration order, and reports it as prose, so it cannot name "the
// first error by (path, keyword)". This package re-checks the same schema
// deterministically to name it. Compile refuses any keyword outside the
// subset, so the two can only agree; the contracts fuzz test checks that they
// do.
package schemacheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Violation is one failed keyword at one instance location. Path is "$" for
// the root and "$.name" for a property (names that are not identifiers are
// written as $["na me"]).
type Violation struct {
	Path    string
	Keyword string
}

// Schema is a compiled schema of the supported subset: type, properties,
// required, additionalProperties (boolean only), minLength and pattern.
type Schema struct {
	typ        string
	properties map[string]*Schema
	required   []string
	closed     bool // additionalProperties: false
	minLength  int  // -1 when absent
	pattern    *regexp.Regexp
}

// Compile parses a schema document. Unknown keywords, non-boolean
// additionalProperties and patterns that cannot be translated are errors.
func Compile(raw []byte) (*Schema, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	return compile(m, "#")
}

func compile(m map[string]any, loc string) (*Schema, error) {
	s := &Schema{minLength: -1}
	for k, v := range m {
		switch k {
		case "type":
			t, ok := v.(string)
			if !ok || !slices.Contains([]string{"null", "boolean", "object", "array", "number", "integer", "string"}, t) {
				return nil, fmt.Errorf("%s/type: want one JSON type name, got %v", loc, v)
			}
			s.typ = t
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s/properties: want an object", loc)
			}
			s.properties = make(map[string]*Schema, len(props))
			for name, sub := range props {
				subm, ok := sub.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s/properties/%s: want a schema object", loc, name)
				}
				c, err := compile(subm, loc+"/properties/"+name)
				if err != nil {
					return nil, err
				}
				s.properties[name] = c
			}
		case "required":
			list, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("%s/required: want an array of strings", loc)
			}
			for _, e := range list {
				name, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("%s/required: want an array of strings", loc)
				}
				s.required = append(s.required, name)
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("%s/additionalProperties: only true or false is supported", loc)
			}
			s.closed = !b
		case "minLength":
			f, ok := v.(float64)
			if !ok || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
				return nil, fmt.Errorf("%s/minLength: want a non-negative integer", loc)
			}
			s.minLength = int(f)
		case "pattern":
			p, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s/pattern: want a string", loc)
			}
			re2, err := TranslatePattern(p)
			if err != nil {
				return nil, fmt.Errorf("%s/pattern: %w", loc, err)
			}
			s.pattern = regexp.MustCompile(re2) // TranslatePattern compiled it already
		default:
			return nil, fmt.Errorf("%s: keyword %q is not supported", loc, k)
		}
	}
	return s, nil
}

// Check returns every violation of instance, a value decoded by
// encoding/json (numbers as float64 or json.Number), sorted by (Path,
// Keyword) without duplicates. It never modifies instance.
func (s *Schema) Check(instance any) []Violation {
	var out []Violation
	s.check(instance, "$", &out)
	slices.SortFunc(out, func(a, b Violation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Keyword, b.Keyword)
	})
	return slices.Compact(out)
}

func (s *Schema) check(v any, path string, out *[]Violation) {
	if s.typ != "" && !typeMatches(v, s.typ) {
		*out = append(*out, Violation{path, "type"})
	}
	switch v := v.(type) {
	case map[string]any:
		for name, sub := range s.properties {
			if pv, ok := v[name]; ok {
				sub.check(pv, join(path, name), out)
			}
		}
		for _, name := range s.required {
			if _, ok := v[name]; !ok {
				*out = append(*out, Violation{path, "required"})
				break
			}
		}
		if s.closed {
			for name := range v {
				if _, ok := s.properties[name]; !ok {
					*out = append(*out, Violation{path, "additionalProperties"})
					break
				}
			}
		}
	case string:
		if s.minLength >= 0 && utf8.RuneCountInString(v) < s.minLength {
			*out = append(*out, Violation{path, "minLength"})
		}
		if s.pattern != nil && !s.pattern.MatchString(v) {
			*out = append(*out, Violation{path, "pattern"})
		}
	}
}

// typeMatches follows JSON Schema: an integer is a number whose fractional
// part is zero, and "number" accepts integers.
func typeMatches(v any, want string) bool {
	got := ""
	switch v := v.(type) {
	case nil:
		got = "null"
	case bool:
		got = "boolean"
	case string:
		got = "string"
	case []any:
		got = "array"
	case map[string]any:
		got = "object"
	case float64:
		got = numberType(v)
	case json.Number:
		f, err := v.Float64()
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return false
		}
		got = numberType(f)
	default:
		return false
	}
	return got == want || (got == "integer" && want == "number")
}

func numberType(f float64) string {
	if _, frac := math.Modf(f); frac == 0 {
		return "integer"
	}
	return "number"
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func join(path, name string) string {
	if identifier.MatchString(name) {
		return path + "." + name
	}
	return path + "[" + strconv.Quote(name) + "]"
}

// ecmaSpace is the ECMA-262 WhiteSpace and LineTerminator set that \s stands
// for in JSON Schema patterns. Go's RE2 \s is only [\t\n\f\r ], which would
// let a string of no-break spaces pass a "\S" (non-blank) pattern.
const ecmaSpace = `\t\n\v\f\r\p{Zs}\x{2028}\x{2029}\x{FEFF}`

// TranslatePattern rewrites an ECMA-262 pattern (without flags) into an RE2
// pattern with the same meaning: \s, \S and . follow ECMA-262. \d, \w and \b
// are ASCII in both dialects and pass through. Constructs RE2 lacks
// (lookaround, backreferences) and the ECMA-only empty classes [] and [^]
// are errors.
func TranslatePattern(p string) (string, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 == len(p) {
				return "", errors.New("pattern ends with a lone backslash")
			}
			i++
			switch p[i] {
			case 's':
				if inClass {
					b.WriteString(ecmaSpace)
				} else {
					b.WriteString("[" + ecmaSpace + "]")
				}
			case 'S':
				if inClass {
					return "", errors.New(`\S inside a character class is not supported`)
				}
				b.WriteString("[^" + ecmaSpace + "]")
			default:
				b.WriteByte('\\')
				b.WriteByte(p[i])
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			if strings.HasPrefix(p[i+1:], "^") {
				b.WriteByte('^')
				i++
			}
			if strings.HasPrefix(p[i+1:], "]") {
				return "", errors.New("empty character classes are not supported")
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		case c == '.' && !inClass:
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		default:
			b.WriteByte(c)
		}
	}
	out := b.String()
	if _, err := regexp.Compile(out); err != nil {
		return "", fmt.Errorf("pattern %q has no RE2 equivalent: %w", p, err)
	}
	return out, nil
}

// ForRE2 returns the schema document with every pattern translated by
// [TranslatePattern], for validators that compile patterns with Go's regexp
// package. The document must be one Compile accepts.
func ForRE2(raw []byte) ([]byte, error) {
	if _, err := Compile(raw); err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if err := rewrite(m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func rewrite(m map[string]any) error {
	if p, ok := m["pattern"].(string); ok {
		re2, err := TranslatePattern(p)
		if err != nil {
			return err
		}
		m["pattern"] = re2
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for _, sub := range props {
			if err := rewrite(sub.(map[string]any)); err != nil {
				return err
			}
		}
	}
	return nil
}
