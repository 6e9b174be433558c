// Package schema validates JSON values against JSON Schema 2020-12 documents
// and names the first violation by (instance path, keyword).
//
// It is the one JSON Schema validator of OpenProgram: the contracts package
// checks the six tools' arguments with it, and the runtime checks runtime
// tool arguments with it. Validity is decided by
// github.com/santhosh-tekuri/jsonschema/v6, which reports every failure as
// structured data (instance location and keyword); this package orders those
// failures and formats the first one. No error text is ever parsed.
//
//	s, err := schema.Compile([]byte(`{"type":"object","required":["id"]}`))
//	if err != nil { ... }
//	if v := s.Validate(map[string]any{}); v != nil {
//		fmt.Println(v) // $.id: required
//	}
//
// # Paths
//
// A [Violation] names where the failure is: "$" for the value itself, then
// ".name" for a property whose name is an identifier, `["na me"]` (a Go
// quoted string) for any other property name, and "[3]" for an array item.
// For required the path names the missing property, for additionalProperties
// the unexpected one. Property names come from the instance, so each is
// clipped to [MaxNameBytes] on a UTF-8 boundary (marked "..."), and a path holds at most
// [MaxPathBytes]: a violation never echoes more than a short excerpt of its
// input.
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
// A schema is compiled on its own: "$ref" resolves inside the document (and
// against the standard meta-schemas), never through files or the network.
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/openprogram/openprogram/contracts/clip"
	"github.com/openprogram/openprogram/contracts/internal/canonjson"
)

// location is the base URI every compiled document gets; it never leaves
// this package (errors name schema locations relative to it).
const location = "urn:openprogram:schema"

// Schema is a compiled schema document. It is safe for concurrent use.
type Schema struct {
	s *jsonschema.Schema
}

// Compile parses one JSON Schema document (draft 2020-12 unless its
// "$schema" names another draft) and compiles it. The document must be a
// single JSON value; it is checked against its meta-schema, its patterns
// must translate to RE2 (see translatePattern), and its references must
// resolve inside it.
func Compile(doc []byte) (*Schema, error) {
	v, err := Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	return CompileValue(v)
}

// CompileValue compiles a schema document already decoded from JSON, with
// numbers as json.Number (as a json.Decoder with UseNumber yields them) or
// float64. The compiled schema may keep references to parts of doc (enum and
// const values): the caller must not change doc afterwards.
func CompileValue(doc any) (*Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(compilePattern)
	if err := c.AddResource(location, doc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	s, err := c.Compile(location)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return &Schema{s: s}, nil
}

// noLoader refuses every URL: a schema may only refer to itself and to the
// meta-schemas the validator embeds.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, errors.New("external references are not supported; define the schema under $defs and refer to it as #/$defs/<name>")
}

func compilePattern(p string) (jsonschema.Regexp, error) {
	re, err := translatePattern(p)
	if err != nil {
		return nil, err
	}
	return ecmaRegexp{re: re, source: p}, nil
}

// ecmaRegexp matches with the RE2 translation but prints as the original
// ECMA-262 pattern.
type ecmaRegexp struct {
	re     *regexp.Regexp
	source string
}

func (r ecmaRegexp) MatchString(s string) bool { return r.re.MatchString(s) }
func (r ecmaRegexp) String() string            { return r.source }

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
	// false schema (for example unevaluatedProperties: false).
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
// keyword "type" before anything else is checked: the validator compares
// numbers exactly, at a cost that grows with the square of their length.
func (s *Schema) Validate(instance any) *Violation {
	if v := longNumber(instance, instance, nil); v != nil {
		return v
	}
	err := s.s.Validate(instance)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		// The validator reports failures only as *ValidationError; deny
		// anything else rather than accept it.
		return &Violation{Path: "$", Keyword: "schema"}
	}
	var first *Violation
	visit(verr, instance, func(v Violation) {
		if first == nil || v.Path < first.Path || (v.Path == first.Path && v.Keyword < first.Keyword) {
			first = &v
		}
	})
	if first == nil {
		return &Violation{Path: "$", Keyword: "schema"}
	}
	return first
}

// visit calls yield for every violation that e reports: its leaves, and for
// required and additionalProperties one violation per property concerned.
func visit(e *jsonschema.ValidationError, instance any, yield func(Violation)) {
	switch k := e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference, *kind.AllOf:
		// Containers: the failures are their causes.
		for _, c := range e.Causes {
			visit(c, instance, yield)
		}
		return
	case *kind.Required:
		for _, name := range k.Missing {
			yield(Violation{Path: formatPath(instance, append(slices.Clip(e.InstanceLocation), name)), Keyword: "required"})
		}
		return
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			yield(Violation{Path: formatPath(instance, append(slices.Clip(e.InstanceLocation), name)), Keyword: "additionalProperties"})
		}
		return
	}
	yield(Violation{Path: formatPath(instance, e.InstanceLocation), Keyword: keyword(e.ErrorKind)})
}

func keyword(k jsonschema.ErrorKind) string {
	switch k.(type) {
	case *kind.FalseSchema:
		return "false"
	case *kind.Not:
		return "not"
	case *kind.InvalidJsonValue:
		return "type"
	case *kind.RefCycle:
		return "$ref"
	}
	if p := k.KeywordPath(); len(p) > 0 {
		return p[0]
	}
	return "schema"
}

// MaxNumberBytes bounds the literal of a json.Number in an instance. Every
// number a program can use exactly (int64, float64, a 128-bit decimal) is
// far shorter.
const MaxNumberBytes = 1000

// longNumber returns a violation at the first (by path) json.Number in v
// whose literal is longer than MaxNumberBytes, or nil. loc is v's location
// in root.
func longNumber(root, v any, loc []string) *Violation {
	var first *Violation
	keep := func(c *Violation) {
		if c != nil && (first == nil || c.Path < first.Path) {
			first = c
		}
	}
	switch v := v.(type) {
	case json.Number:
		if len(v) > MaxNumberBytes {
			return &Violation{Path: formatPath(root, loc), Keyword: "type"}
		}
	case map[string]any:
		for k, e := range v {
			keep(longNumber(root, e, append(loc, k)))
		}
	case []any:
		for i, e := range v {
			keep(longNumber(root, e, append(loc, strconv.Itoa(i))))
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

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// formatPath writes the instance location loc. Each token of loc names a
// property or, where the value at that point of instance is an array, an
// index.
func formatPath(instance any, loc []string) string {
	var b strings.Builder
	b.WriteString("$")
	v := instance
	for _, tok := range loc {
		var seg string
		switch cur := v.(type) {
		case []any:
			seg = "[" + tok + "]"
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(cur) {
				v = cur[i]
			} else {
				v = nil
			}
		case map[string]any:
			seg = member(tok)
			v = cur[tok]
		default:
			seg = member(tok)
			v = nil
		}
		if !appendBounded(&b, seg) {
			return b.String()
		}
	}
	return b.String()
}

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
	if len(name) <= MaxNameBytes && identifier.MatchString(name) {
		return "." + name
	}
	return "[" + strconv.Quote(clip.String(name, MaxNameBytes)) + "]"
}
