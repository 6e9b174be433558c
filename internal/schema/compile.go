package schema

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/openprogram/openprogram/internal/clip"
)

// Dialects a document may name in "$schema". Both are read with the
// 2020-12 keyword set (see the package documentation).
const (
	// Draft202012 is the JSON Schema 2020-12 meta-schema URI, the default.
	Draft202012 = "https://json-schema.org/draft/2020-12/schema"
	// Draft07 is the JSON Schema draft-07 meta-schema URI.
	Draft07 = "http://json-schema.org/draft-07/schema#"
)

// An Option changes how [Compile] and [CompileValue] read a document.
type Option func(*options)

type options struct {
	annotations map[string]bool
	prefixes    []string
}

// AllowAnnotations lets a document use the named keywords, beyond the
// ones this package knows, as annotations: their values are neither checked
// nor used. Without it an unknown keyword is a compile error, so that a typo
// ("requried") does not silently validate nothing.
func AllowAnnotations(names ...string) Option {
	return func(o *options) {
		if o.annotations == nil {
			o.annotations = map[string]bool{}
		}
		for _, n := range names {
			o.annotations[n] = true
		}
	}
}

// AllowAnnotationPrefix lets a document use every keyword that starts with
// prefix (such as "x-") as an annotation, as [AllowAnnotations] does for
// single names.
func AllowAnnotationPrefix(prefix string) Option {
	return func(o *options) { o.prefixes = append(o.prefixes, prefix) }
}

func (o *options) annotation(k string) bool {
	if o.annotations[k] {
		return true
	}
	for _, p := range o.prefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// typeSet is a set of JSON types, one bit each.
type typeSet uint8

const (
	typeNull typeSet = 1 << iota
	typeBoolean
	typeObject
	typeArray
	typeNumber
	typeString
	typeInteger
)

// typeNamed returns the type a "type" name stands for, or 0.
func typeNamed(name string) typeSet {
	switch name {
	case "null":
		return typeNull
	case "boolean":
		return typeBoolean
	case "object":
		return typeObject
	case "array":
		return typeArray
	case "number":
		return typeNumber
	case "string":
		return typeString
	case "integer":
		return typeInteger
	}
	return 0
}

// node is one compiled (sub)schema. A field left at its zero value (nil,
// absent) means the keyword is absent.
type node struct {
	// boolean is set for the schemas true and false; value is then their
	// value and nothing else is set.
	boolean, value bool

	types     typeSet
	enum      map[string]bool // canonical keys (valueKey) of the values
	constKey  *string
	ref       *node
	allOf     []*node
	anyOf     []*node
	oneOf     []*node
	not       *node
	ifNode    *node
	thenNode  *node
	elseNode  *node
	dependent []dependency // dependentRequired, by property name

	// Objects.
	properties    map[string]*node
	patternProps  []patternNode
	additional    *node
	propertyNames *node
	required      []string
	minProperties int64
	maxProperties int64 // -1: absent

	// Arrays.
	prefixItems []*node
	items       *node
	minItems    int64
	maxItems    int64 // -1: absent
	uniqueItems bool

	// Strings.
	minLength int64
	maxLength int64 // -1: absent
	pattern   *regexp.Regexp

	// Numbers.
	minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf *decimal
}

type patternNode struct {
	re *regexp.Regexp
	n  *node
}

type dependency struct {
	property string
	required []string
}

// compiler compiles one document.
type compiler struct {
	opts    options
	rootID  string
	dialect string
	nodes   map[string]*node // by JSON pointer ("" for the root), anchors by "#name"
	refs    []pendingRef
}

type pendingRef struct {
	from *node
	at   string
	ref  string
}

// CompileError reports a schema document that cannot be compiled: Pointer
// is the JSON pointer of the (sub)schema at fault ("" for the document),
// Keyword the keyword whose value is wrong ("" when the schema itself is).
type CompileError struct {
	Pointer string
	Keyword string
	Err     error
}

func (e *CompileError) Error() string {
	at := "#" + e.Pointer
	if e.Keyword != "" {
		at += "/" + EscapeToken(e.Keyword)
	}
	return fmt.Sprintf("schema at %s: %v", at, e.Err)
}

func (e *CompileError) Unwrap() error { return e.Err }

func compileDocument(doc any, opts []Option) (*node, map[string]*node, error) {
	c := &compiler{nodes: map[string]*node{}, dialect: Draft202012}
	for _, o := range opts {
		o(&c.opts)
	}
	if m, ok := doc.(map[string]any); ok {
		if s, present := m["$schema"]; present {
			d, err := dialect(s)
			if err != nil {
				return nil, nil, &CompileError{Keyword: "$schema", Err: err}
			}
			c.dialect = d
		}
		if id, present := m["$id"]; present {
			s, ok := id.(string)
			if !ok {
				return nil, nil, &CompileError{Keyword: "$id", Err: errors.New("must be a string")}
			}
			if i := strings.IndexByte(s, '#'); i >= 0 && i < len(s)-1 {
				return nil, nil, &CompileError{Keyword: "$id", Err: fmt.Errorf("%q has a fragment; name a location with $anchor instead", s)}
			}
			c.rootID = strings.TrimSuffix(s, "#")
		}
	}
	root, err := c.schema(doc, "", true)
	if err != nil {
		return nil, nil, err
	}
	for _, r := range c.refs {
		target, err := c.resolve(r.ref)
		if err != nil {
			return nil, nil, &CompileError{Pointer: r.at, Keyword: "$ref", Err: err}
		}
		r.from.ref = target
	}
	return root, c.nodes, nil
}

// dialect returns the dialect named by a "$schema" value.
func dialect(v any) (string, error) {
	s, ok := v.(string)
	switch {
	case !ok:
		return "", errors.New("must be a string")
	case s == Draft202012 || s == Draft202012+"#":
		return Draft202012, nil
	case s == Draft07 || s == strings.TrimSuffix(Draft07, "#"):
		return Draft07, nil
	}
	return "", fmt.Errorf("dialect %q is not supported; use %q or %q", s, Draft202012, Draft07)
}

// resolve finds the schema a "$ref" names: a JSON pointer ("#/$defs/a") or
// an anchor ("#a") inside the document, optionally after the document's
// own $id.
func (c *compiler) resolve(ref string) (*node, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok && c.rootID != "" {
		frag, ok = strings.CutPrefix(ref, c.rootID+"#")
		if !ok && ref == c.rootID {
			frag, ok = "", true
		}
	}
	if !ok {
		return nil, fmt.Errorf("%q is not inside this document: references to other documents are not supported; define the schema under $defs and refer to it as #/$defs/<name>", clipRef(ref))
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil, fmt.Errorf("%q is not a valid URI fragment: %w", clipRef(ref), err)
	}
	if frag != "" && frag[0] != '/' {
		if n, ok := c.nodes["#"+frag]; ok {
			return n, nil
		}
		return nil, fmt.Errorf("no $anchor %q in the document", clipRef(frag))
	}
	if n, ok := c.nodes[frag]; ok {
		return n, nil
	}
	return nil, fmt.Errorf("%q does not name a schema in the document", clipRef(ref))
}

// clipRef bounds a schema's own text (a reference, a keyword) in an error.
func clipRef(s string) string { return clip.String(s, MaxPathBytes) }

// EscapeToken escapes one reference token of a JSON Pointer (RFC 6901):
// "~" as "~0", "/" as "~1". A caller naming a subschema for
// [Schema.Resolve] by a property or definition name escapes it with this.
func EscapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// isName reports whether s matches ^[A-Za-z_][A-Za-z0-9_<more>]*$, more
// being the further bytes allowed after the first.
func isName(s, more string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_'
		if !letter && (i == 0 || !('0' <= c && c <= '9') && !strings.ContainsRune(more, rune(c))) {
			return false
		}
	}
	return true
}

// schema compiles the (sub)schema v found at JSON pointer at.
func (c *compiler) schema(v any, at string, root bool) (*node, error) {
	switch v := v.(type) {
	case bool:
		n := &node{boolean: true, value: v}
		c.nodes[at] = n
		return n, nil
	case map[string]any:
		n := &node{maxProperties: -1, maxItems: -1, maxLength: -1}
		c.nodes[at] = n
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := c.keyword(n, at, k, v[k], root); err != nil {
				var ce *CompileError
				if errors.As(err, &ce) {
					return nil, err
				}
				return nil, &CompileError{Pointer: at, Keyword: k, Err: err}
			}
		}
		return n, nil
	}
	return nil, &CompileError{Pointer: at, Err: errors.New("a schema must be an object or a boolean")}
}

// keyword compiles keyword k of the schema n at pointer at.
func (c *compiler) keyword(n *node, at, k string, v any, root bool) error {
	sub := func(key string, v any) (*node, error) {
		return c.schema(v, at+"/"+EscapeToken(key), false)
	}
	var err error
	switch k {
	case "$schema":
		d, err := dialect(v)
		if err != nil {
			return err
		}
		if d != c.dialect {
			return fmt.Errorf("a subschema may not change the dialect (the document uses %q)", c.dialect)
		}
	case "$id":
		if !root {
			return errors.New("$id is only supported at the document root (embedded resources are not)")
		}
	case "$anchor":
		s, ok := v.(string)
		if !ok || !isName(s, "-.") {
			return errors.New("must be a name: a letter or _ first, then letters, digits or any of - _ . (dot)")
		}
		if _, dup := c.nodes["#"+s]; dup {
			return fmt.Errorf("anchor %q is defined twice", s)
		}
		c.nodes["#"+s] = n
	case "$ref":
		s, ok := v.(string)
		if !ok {
			return errors.New("must be a string")
		}
		c.refs = append(c.refs, pendingRef{from: n, at: at, ref: s})
	case "$defs", "definitions", "properties":
		m, ok := v.(map[string]any)
		if !ok {
			return errors.New("must be an object of schemas")
		}
		props := make(map[string]*node, len(m))
		// In name order, as every object of the document: the first error
		// (a duplicate anchor, a bad subschema) is the same on every run.
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if props[name], err = c.schema(m[name], at+"/"+EscapeToken(k)+"/"+EscapeToken(name), false); err != nil {
				return err
			}
		}
		if k == "properties" {
			n.properties = props
		}
	case "patternProperties":
		m, ok := v.(map[string]any)
		if !ok {
			return errors.New("must be an object of schemas")
		}
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			re, err := translatePattern(name)
			if err != nil {
				return err
			}
			s, err := c.schema(m[name], at+"/patternProperties/"+EscapeToken(name), false)
			if err != nil {
				return err
			}
			n.patternProps = append(n.patternProps, patternNode{re: re, n: s})
		}
	case "additionalProperties":
		n.additional, err = sub(k, v)
	case "propertyNames":
		n.propertyNames, err = sub(k, v)
	case "items":
		if _, isArray := v.([]any); isArray {
			return errors.New("must be a schema; for a tuple use prefixItems (items as an array is not supported)")
		}
		n.items, err = sub(k, v)
	case "not":
		n.not, err = sub(k, v)
	case "if":
		n.ifNode, err = sub(k, v)
	case "then":
		n.thenNode, err = sub(k, v)
	case "else":
		n.elseNode, err = sub(k, v)
	case "allOf", "anyOf", "oneOf", "prefixItems":
		a, ok := v.([]any)
		if !ok || len(a) == 0 {
			return errors.New("must be a non-empty array of schemas")
		}
		list := make([]*node, len(a))
		for i, s := range a {
			if list[i], err = c.schema(s, fmt.Sprintf("%s/%s/%d", at, k, i), false); err != nil {
				return err
			}
		}
		switch k {
		case "allOf":
			n.allOf = list
		case "anyOf":
			n.anyOf = list
		case "oneOf":
			n.oneOf = list
		default:
			n.prefixItems = list
		}
	case "type":
		n.types, err = types(v)
	case "enum":
		a, ok := v.([]any)
		if !ok {
			return errors.New("must be an array")
		}
		n.enum = make(map[string]bool, len(a))
		for _, e := range a {
			key, ok := valueKey(e)
			if !ok {
				return errors.New("must hold JSON values")
			}
			n.enum[key] = true
		}
	case "const":
		key, ok := valueKey(v)
		if !ok {
			return errors.New("must be a JSON value")
		}
		n.constKey = &key
	case "required":
		n.required, err = stringSet(v)
	case "dependentRequired":
		m, ok := v.(map[string]any)
		if !ok {
			return errors.New("must be an object of string arrays")
		}
		for _, name := range slices.Sorted(maps.Keys(m)) {
			req, err := stringSet(m[name])
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			n.dependent = append(n.dependent, dependency{property: name, required: req})
		}
	case "minProperties":
		n.minProperties, err = count(v)
	case "maxProperties":
		n.maxProperties, err = count(v)
	case "minItems":
		n.minItems, err = count(v)
	case "maxItems":
		n.maxItems, err = count(v)
	case "minLength":
		n.minLength, err = count(v)
	case "maxLength":
		n.maxLength, err = count(v)
	case "uniqueItems":
		b, ok := v.(bool)
		if !ok {
			return errors.New("must be a boolean")
		}
		n.uniqueItems = b
	case "pattern":
		s, ok := v.(string)
		if !ok {
			return errors.New("must be a string")
		}
		n.pattern, err = translatePattern(s)
	case "minimum":
		n.minimum, err = limit(v)
	case "maximum":
		n.maximum, err = limit(v)
	case "exclusiveMinimum":
		n.exclusiveMinimum, err = limit(v)
	case "exclusiveMaximum":
		n.exclusiveMaximum, err = limit(v)
	case "multipleOf":
		n.multipleOf, err = limit(v)
		if err == nil && n.multipleOf.sign() <= 0 {
			err = errors.New("must be greater than 0")
		}
	case "format", "$comment", "title", "description", "contentMediaType", "contentEncoding":
		if _, ok := v.(string); !ok {
			return errors.New("must be a string")
		}
	case "deprecated", "readOnly", "writeOnly":
		if _, ok := v.(bool); !ok {
			return errors.New("must be a boolean")
		}
	case "examples":
		if _, ok := v.([]any); !ok {
			return errors.New("must be an array")
		}
	case "default":
	default:
		if c.opts.annotation(k) {
			return nil
		}
		return fmt.Errorf("unknown keyword %q (a typo, or a keyword this validator does not support)", clipRef(k))
	}
	return err
}

func types(v any) (typeSet, error) {
	if s, ok := v.(string); ok {
		t := typeNamed(s)
		if t == 0 {
			return 0, fmt.Errorf("unknown type %q", clipRef(s))
		}
		return t, nil
	}
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return 0, errors.New("must be a type name or a non-empty array of type names")
	}
	var set typeSet
	for _, e := range a {
		s, _ := e.(string)
		t := typeNamed(s)
		if t == 0 || set&t != 0 {
			return 0, errors.New("must be a type name or an array of distinct type names")
		}
		set |= t
	}
	return set, nil
}

func stringSet(v any) ([]string, error) {
	a, ok := v.([]any)
	if !ok {
		return nil, errors.New("must be an array of strings")
	}
	out := make([]string, 0, len(a))
	for _, e := range a {
		s, ok := e.(string)
		if !ok || slices.Contains(out, s) {
			return nil, errors.New("must be an array of distinct strings")
		}
		out = append(out, s)
	}
	return out, nil
}

// count reads a non-negative integer keyword (1.0 is an integer); values
// beyond int64 are held at math.MaxInt64.
func count(v any) (int64, error) {
	d, ok := number(v)
	if ok {
		if n, ok := d.nonNegativeInt(); ok {
			return n, nil
		}
	}
	return 0, errors.New("must be a non-negative integer")
}

func limit(v any) (*decimal, error) {
	if _, isString := v.(string); !isString {
		if d, ok := number(v); ok {
			return &d, nil
		}
	}
	return nil, errors.New("must be a number")
}

// valueKey returns a canonical encoding of the JSON value v in which equal
// values (by JSON Schema equality: 1 equals 1.0, object members in any
// order) have equal keys, and false when v is not a JSON value.
func valueKey(v any) (string, bool) {
	var b strings.Builder
	ok := writeKey(&b, v)
	return b.String(), ok
}

func writeKey(b *strings.Builder, v any) bool {
	switch v := v.(type) {
	case nil:
		b.WriteByte('n')
	case bool:
		if v {
			b.WriteByte('t')
		} else {
			b.WriteByte('f')
		}
	case string:
		writeKeyString(b, v)
	case []any:
		b.WriteByte('[')
		for _, e := range v {
			if !writeKey(b, e) {
				return false
			}
		}
		b.WriteByte(']')
	case map[string]any:
		names := make([]string, 0, len(v))
		for k := range v {
			names = append(names, k)
		}
		slices.Sort(names)
		b.WriteByte('{')
		for _, k := range names {
			writeKeyString(b, k)
			if !writeKey(b, v[k]) {
				return false
			}
		}
		b.WriteByte('}')
	default:
		d, ok := number(v)
		if !ok {
			return false
		}
		b.WriteByte('d')
		d.key(b)
	}
	return true
}

func writeKeyString(b *strings.Builder, s string) {
	b.WriteByte('s')
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}
