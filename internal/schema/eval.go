package schema

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// token is one step of an instance location: a property name, or an index
// when index >= 0.
type token struct {
	name  string
	index int
}

// activeRef is a "$ref" being evaluated: target at instance depth depth.
type activeRef struct {
	target *node
	depth  int
}

// evaluator checks one instance. With collect set, eval reports every
// violation to keep (which retains the first by (path, keyword)); without
// it, eval only answers whether the value is valid and stops at the first
// failure.
type evaluator struct {
	path  []token
	refs  []activeRef
	first *Violation
}

// keep records a violation at the current location (plus extra, a
// property name, when not empty) if it is the first so far.
func (e *evaluator) keep(keyword string, extra *token) {
	loc := e.path
	if extra != nil {
		loc = append(loc[:len(loc):len(loc)], *extra)
	}
	v := Violation{Path: formatTokens(loc), Keyword: keyword}
	if e.first == nil || v.Path < e.first.Path || (v.Path == e.first.Path && v.Keyword < e.first.Keyword) {
		e.first = &v
	}
}

// failer returns the fail of one evaluation: fail(keyword, extra) sets
// *ok false, keeps the violation when collecting, and reports whether
// the evaluation goes on (only when collecting every violation).
func (e *evaluator) failer(ok *bool, collect bool) func(keyword string, extra *token) bool {
	return func(keyword string, extra *token) bool {
		*ok = false
		if collect {
			e.keep(keyword, extra)
		}
		return collect
	}
}

// eval reports whether v is valid against n; with collect it reports each
// violation to keep.
func (e *evaluator) eval(n *node, v any, collect bool) bool {
	if n.boolean {
		if !n.value && collect {
			e.keep("false", nil)
		}
		return n.value
	}
	ok := true
	fail := e.failer(&ok, collect)

	if n.types != 0 && !hasType(n.types, v) && !fail("type", nil) {
		return false
	}
	if n.enum != nil {
		if key, isJSON := valueKey(v); !isJSON || !n.enum[key] {
			if !fail("enum", nil) {
				return false
			}
		}
	}
	if n.constKey != nil {
		if key, isJSON := valueKey(v); !isJSON || key != *n.constKey {
			if !fail("const", nil) {
				return false
			}
		}
	}
	if n.ref != nil && !e.evalRef(n, v, collect) {
		if ok = false; !collect {
			return false
		}
	}
	for _, s := range n.allOf {
		if !e.eval(s, v, collect) {
			if ok = false; !collect {
				return false
			}
		}
	}
	if n.anyOf != nil && !e.anyOf(n.anyOf, v) && !fail("anyOf", nil) {
		return false
	}
	if n.oneOf != nil && !e.oneOf(n.oneOf, v) && !fail("oneOf", nil) {
		return false
	}
	if n.not != nil && e.eval(n.not, v, false) && !fail("not", nil) {
		return false
	}
	if n.ifNode != nil {
		branch := n.elseNode
		if e.eval(n.ifNode, v, false) {
			branch = n.thenNode
		}
		if branch != nil && !e.eval(branch, v, collect) {
			if ok = false; !collect {
				return false
			}
		}
	}

	switch v := v.(type) {
	case map[string]any:
		if !e.object(n, v, collect) {
			ok = false
		}
	case []any:
		if !e.array(n, v, collect) {
			ok = false
		}
	case string:
		if n.minLength > 0 || n.maxLength >= 0 {
			l := int64(utf8.RuneCountInString(v))
			if l < n.minLength && !fail("minLength", nil) {
				return false
			}
			if n.maxLength >= 0 && l > n.maxLength && !fail("maxLength", nil) {
				return false
			}
		}
		if n.pattern != nil && !n.pattern.MatchString(v) && !fail("pattern", nil) {
			return false
		}
	default:
		if n.minimum != nil || n.maximum != nil || n.exclusiveMinimum != nil || n.exclusiveMaximum != nil || n.multipleOf != nil {
			d, isNum := number(v)
			if isNum {
				if n.minimum != nil && d.cmp(*n.minimum) < 0 && !fail("minimum", nil) {
					return false
				}
				if n.maximum != nil && d.cmp(*n.maximum) > 0 && !fail("maximum", nil) {
					return false
				}
				if n.exclusiveMinimum != nil && d.cmp(*n.exclusiveMinimum) <= 0 && !fail("exclusiveMinimum", nil) {
					return false
				}
				if n.exclusiveMaximum != nil && d.cmp(*n.exclusiveMaximum) >= 0 && !fail("exclusiveMaximum", nil) {
					return false
				}
				if n.multipleOf != nil && !d.multipleOf(*n.multipleOf) && !fail("multipleOf", nil) {
					return false
				}
			}
		}
	}
	return ok
}

// evalRef evaluates n's "$ref". A reference that comes back to a schema it
// is already evaluating, at the same instance location, would never end:
// it fails with keyword "$ref".
func (e *evaluator) evalRef(n *node, v any, collect bool) bool {
	depth := len(e.path)
	for i := len(e.refs) - 1; i >= 0 && e.refs[i].depth == depth; i-- {
		if e.refs[i].target == n.ref {
			if collect {
				e.keep("$ref", nil)
			}
			return false
		}
	}
	e.refs = append(e.refs, activeRef{target: n.ref, depth: depth})
	ok := e.eval(n.ref, v, collect)
	e.refs = e.refs[:len(e.refs)-1]
	return ok
}

func (e *evaluator) anyOf(list []*node, v any) bool {
	for _, s := range list {
		if e.eval(s, v, false) {
			return true
		}
	}
	return false
}

func (e *evaluator) oneOf(list []*node, v any) bool {
	matched := 0
	for _, s := range list {
		if e.eval(s, v, false) {
			if matched++; matched > 1 {
				return false
			}
		}
	}
	return matched == 1
}

// child evaluates s against the member or item v at tok.
func (e *evaluator) child(s *node, tok token, v any, collect bool) bool {
	e.path = append(e.path, tok)
	ok := e.eval(s, v, collect)
	e.path = e.path[:len(e.path)-1]
	return ok
}

func (e *evaluator) object(n *node, obj map[string]any, collect bool) bool {
	ok := true
	fail := e.failer(&ok, collect)
	for _, name := range n.required {
		if _, present := obj[name]; !present && !fail("required", &token{name: name, index: -1}) {
			return false
		}
	}
	for _, d := range n.dependent {
		if _, present := obj[d.property]; !present {
			continue
		}
		for _, name := range d.required {
			if _, present := obj[name]; !present && !fail("dependentRequired", &token{name: name, index: -1}) {
				return false
			}
		}
	}
	if int64(len(obj)) < n.minProperties && !fail("minProperties", nil) {
		return false
	}
	if n.maxProperties >= 0 && int64(len(obj)) > n.maxProperties && !fail("maxProperties", nil) {
		return false
	}
	if n.properties == nil && n.patternProps == nil && n.additional == nil && n.propertyNames == nil {
		return ok
	}
	for name, v := range obj {
		tok := token{name: name, index: -1}
		if n.propertyNames != nil && !e.eval(n.propertyNames, name, false) && !fail("propertyNames", &tok) {
			return false
		}
		matched := false
		if s, found := n.properties[name]; found {
			matched = true
			if !e.child(s, tok, v, collect) {
				if ok = false; !collect {
					return false
				}
			}
		}
		for _, p := range n.patternProps {
			if p.re.MatchString(name) {
				matched = true
				if !e.child(p.n, tok, v, collect) {
					if ok = false; !collect {
						return false
					}
				}
			}
		}
		if matched || n.additional == nil {
			continue
		}
		if n.additional.boolean {
			if !n.additional.value && !fail("additionalProperties", &tok) {
				return false
			}
			continue
		}
		if !e.child(n.additional, tok, v, collect) {
			if ok = false; !collect {
				return false
			}
		}
	}
	return ok
}

func (e *evaluator) array(n *node, a []any, collect bool) bool {
	ok := true
	fail := e.failer(&ok, collect)
	if int64(len(a)) < n.minItems && !fail("minItems", nil) {
		return false
	}
	if n.maxItems >= 0 && int64(len(a)) > n.maxItems && !fail("maxItems", nil) {
		return false
	}
	if n.uniqueItems && len(a) > 1 {
		seen := make(map[string]bool, len(a))
		for _, item := range a {
			key, _ := valueKey(item)
			if seen[key] {
				if !fail("uniqueItems", nil) {
					return false
				}
				break
			}
			seen[key] = true
		}
	}
	for i, item := range a {
		s := n.items
		if i < len(n.prefixItems) {
			s = n.prefixItems[i]
		}
		if s == nil {
			continue
		}
		tok := token{index: i}
		if s.boolean && s == n.items {
			if !s.value && !fail("items", &tok) {
				return false
			}
			continue
		}
		if !e.child(s, tok, item, collect) {
			if ok = false; !collect {
				return false
			}
		}
	}
	return ok
}

// hasType reports whether v has one of the types in set ("integer": a
// number without a fractional part, 1.0 included).
func hasType(set typeSet, v any) bool {
	switch v := v.(type) {
	case nil:
		return set&typeNull != 0
	case bool:
		return set&typeBoolean != 0
	case string:
		return set&typeString != 0
	case map[string]any:
		return set&typeObject != 0
	case []any:
		return set&typeArray != 0
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
		return set&typeNumber != 0 || set&typeInteger != 0 && v == math.Trunc(v)
	case json.Number, int, int64:
		d, ok := number(v)
		if !ok {
			return false
		}
		return set&typeNumber != 0 || set&typeInteger != 0 && d.isInteger()
	}
	return false
}

// formatTokens writes an instance location as a [Violation] path.
func formatTokens(loc []token) string {
	var b strings.Builder
	b.WriteString("$")
	for _, t := range loc {
		seg := "[" + strconv.Itoa(t.index) + "]"
		if t.index < 0 {
			seg = member(t.name)
		}
		if !appendBounded(&b, seg) {
			break
		}
	}
	return b.String()
}
