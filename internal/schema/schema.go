// Package schema validates JSON values against JSON Schema 2020-12 documents
// and names the first violation by (instance path, keyword).
//
// It is the one JSON Schema validator of OpenProgram: the contracts package
// checks the six tools' arguments with it, the runtime checks runtime tool
// arguments with it, and the MCP frame checker (mcpserver/schemacheck)
// checks frames against the official protocol schema with it. It is
// written for this project, with the standard library only: its package
// initialisation does nothing beyond a few small tables, and a document is
// compiled only when a caller asks, cheaply. Violations are structured data
// (instance path and keyword); no error text is ever parsed.
//
//	s, err := schema.Compile([]byte(`{"type":"object","required":["id"]}`))
//	if err != nil { ... }
//	if v := s.Validate(map[string]any{}); v != nil {
//		fmt.Println(v) // $.id: required
//	}
//
// # Keywords
//
// Assertions and applicators: type, enum, const, properties, required,
// additionalProperties, patternProperties, propertyNames, items,
// prefixItems, minItems, maxItems, uniqueItems, minLength and maxLength
// (counted in code points), pattern, minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, multipleOf, minProperties, maxProperties,
// dependentRequired, allOf, anyOf, oneOf, not, if/then/else and $ref.
// Structure: $defs (and draft-07's definitions), $anchor, $id (at the
// document root only: it names the document, nothing is ever loaded).
// Annotations, checked for shape and otherwise ignored: $schema, $comment,
// title, description, default, examples, deprecated, readOnly, writeOnly,
// contentMediaType, contentEncoding and format (an annotation, as 2020-12
// makes it by default). Any other keyword is a compile error, so that a
// typo ("requried") does not silently validate nothing; [AllowAnnotations]
// and [AllowAnnotationPrefix] let a caller admit more annotations.
//
// "$schema" may name 2020-12 ([Draft202012], the default) or draft-07
// ([Draft07]); any other dialect is a compile error. A draft-07 document is
// read with the keywords above, which mean the same in both drafts, with
// one difference on the strict side: keywords next to a "$ref" apply too.
// Draft-07's array form of items, additionalItems and dependencies are
// compile errors.
//
// # Numbers
//
// Numbers are compared exactly as written, never through float64: 1 equals
// 1.0 and 1e0, -0 equals 0, an integer is a number with no fractional part
// (12345678901234567890 and 1.0 are integers, 1.5 is not), multipleOf is
// exact (0.3 is a multiple of 0.1), and integers beyond float64's range
// keep every digit. A float64 instance value is read as the shortest
// decimal that reads back as it.
//
// # Paths
//
// A [Violation] names where the failure is: "$" for the value itself, then
// ".name" for a property whose name is an identifier, `["na me"]` (a Go
// quoted string) for any other property name, and "[3]" for an array item.
// For required and dependentRequired the path names the missing property,
// for additionalProperties the unexpected one, for propertyNames the name
// that fails, for items (when it is false after prefixItems) the extra
// item. Property names come from the instance, so each is clipped to
// [MaxNameBytes] on a UTF-8 boundary (marked "..."), and a path holds at
// most [MaxPathBytes]: a violation never echoes more than a short excerpt
// of its input.
//
// allOf, $ref, if/then/else and the object and array applicators pass on
// the violations of their subschemas; anyOf, oneOf and not fail as
// themselves (keyword "anyOf", "oneOf", "not") at the value's location,
// and a false schema elsewhere fails as "false". A "$ref" that comes back
// to itself without moving into the instance fails as "$ref".
//
// # Patterns
//
// JSON Schema patterns are ECMA-262 regular expressions. Compile translates
// them into Go's RE2 syntax with translatePattern, so that \s, \S and .
// keep their ECMA-262 meaning (a string of no-break spaces does not match
// "\S"); constructs RE2 lacks are compile errors.
//
// # References
//
// "$ref" resolves inside the document only: a JSON pointer ("#/$defs/a",
// "#/definitions/a", percent-encoded where needed), an anchor ("#a"),
// optionally after the document's own $id. Nothing is loaded from files or
// the network.
package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/openprogram/openprogram/internal/canonjson"
	"github.com/openprogram/openprogram/internal/clip"
)

// Schema is a compiled schema document, or one schema inside it (see
// [Schema.Resolve]). It is safe for concurrent use.
type Schema struct {
	root  *node
	nodes map[string]*node // every schema of the document, by JSON pointer
}

// Compile parses one JSON Schema document and compiles it. The document
// must be a single JSON value; every keyword must be one this package
// knows (or one opts allow), with a value of the right shape; its patterns
// must translate to RE2 (see translatePattern), and its references must
// resolve inside it. A document that fails is reported as a
// *[CompileError] naming where.
func Compile(doc []byte, opts ...Option) (*Schema, error) {
	v, err := Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	return CompileValue(v, opts...)
}

// CompileValue compiles a schema document already decoded from JSON, with
// numbers as json.Number (as a json.Decoder with UseNumber yields them) or
// float64. The compiled schema keeps no reference to doc.
func CompileValue(doc any, opts ...Option) (*Schema, error) {
	root, nodes, err := compileDocument(doc, opts)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return &Schema{root: root, nodes: nodes}, nil
}

// Resolve returns the schema that a "$ref" of ref would name inside the
// document s was compiled from: "#" for the document, a JSON pointer such
// as "#/$defs/CallToolResult", or an anchor ("#name"). The result shares
// the compiled document with s.
func (s *Schema) Resolve(ref string) (*Schema, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("resolve %q: only references inside the document (starting with #) are supported", clipRef(ref))
	}
	n, found := s.nodes[frag]
	if !found {
		if n = anchorNode(s.nodes, frag); n == nil {
			return nil, fmt.Errorf("resolve %q: the document has no schema there", clipRef(ref))
		}
	}
	return &Schema{root: n, nodes: s.nodes}, nil
}

// anchorNode returns the node named by a plain-name fragment, looked up by
// the "$anchor" keyword recorded under the reserved key "#name".
func anchorNode(nodes map[string]*node, name string) *node {
	if name == "" || name[0] == '/' {
		return nil
	}
	return nodes["#"+name]
}

// Decode decodes exactly one JSON value (a schema document or an instance)
// into fresh values, numbers as json.Number, as [CompileValue] and
// [Schema.Validate] take them: numbers are then checked exactly as written.
// Data after the value is an error.
func Decode(data []byte) (any, error) {
	return canonjson.Decode(data)
}

// Violation is one failed keyword at one instance location.
type Violation struct {
	// Path is the instance location: "$", "$.name", `$["na me"]`, "$.list[0]".
	Path string
	// Keyword is the failed JSON Schema keyword: "type", "required",
	// "additionalProperties", "minLength", "pattern", ...; "false" for a
	// false schema (for example "properties": {"x": false}).
	Keyword string
}

// String returns "<path>: <keyword>".
func (v Violation) String() string { return v.Path + ": " + v.Keyword }

// Validate checks instance, a value as encoding/json decodes it (numbers
// as json.Number or float64), and returns nil when it is valid. Otherwise
// it returns the first of all violations ordered by (Path, Keyword). It
// never modifies instance.
//
// A json.Number literal longer than [MaxNumberBytes] is refused with
// keyword "type" before anything else is checked.
func (s *Schema) Validate(instance any) *Violation {
	if v := longNumber(instance, nil); v != nil {
		return v
	}
	e := &evaluator{}
	if e.eval(s.root, instance, false) {
		return nil
	}
	// Invalid: evaluate again, collecting every violation, for the first.
	e = &evaluator{}
	e.eval(s.root, instance, true)
	if e.first == nil {
		return &Violation{Path: "$", Keyword: "schema"}
	}
	return e.first
}

// MaxNumberBytes bounds the literal of a json.Number in an instance. Every
// number a program can use exactly (int64, float64, a 128-bit decimal) is
// far shorter.
const MaxNumberBytes = 1000

// longNumber returns a violation at the first (by path) json.Number in v
// whose literal is longer than MaxNumberBytes, or nil. loc is v's location.
func longNumber(v any, loc []token) *Violation {
	var first *Violation
	keep := func(c *Violation) {
		if c != nil && (first == nil || c.Path < first.Path) {
			first = c
		}
	}
	switch v := v.(type) {
	case json.Number:
		if len(v) > MaxNumberBytes {
			return &Violation{Path: formatTokens(loc), Keyword: "type"}
		}
	case map[string]any:
		for k, e := range v {
			keep(longNumber(e, append(loc, token{name: k, index: -1})))
		}
	case []any:
		for i, e := range v {
			keep(longNumber(e, append(loc, token{index: i})))
		}
	}
	return first
}

// MaxNameBytes bounds each property name in a [Violation] path; a longer
// name is cut on a UTF-8 boundary and quoted with "..." at its end.
const MaxNameBytes = 64

// MaxPathBytes bounds a whole [Violation] path; a deeper path is cut after
// the last segment that fits and ends in "...".
const MaxPathBytes = 256

// appendBounded appends seg unless the path would exceed MaxPathBytes, in
// which case it appends "..." and reports false.
func appendBounded(b *strings.Builder, seg string) bool {
	if b.Len()+len(seg) > MaxPathBytes-len("...") {
		b.WriteString("...")
		return false
	}
	b.WriteString(seg)
	return true
}

// member formats one property name as a path segment, clipped.
func member(name string) string {
	if len(name) <= MaxNameBytes && isName(name, "") {
		return "." + name
	}
	return "[" + strconv.Quote(clip.String(name, MaxNameBytes)) + "]"
}
