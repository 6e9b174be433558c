package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// draft202012 is the only $schema value a tool schema may declare.
const draft202012 = "https://json-schema.org/draft/2020-12/schema"

// ArgumentsError reports tool arguments that are not JSON or do not match
// the tool's input schema. Path is where the problem is ("$", "$.path"),
// Keyword the failed schema keyword ("required", "type", "json", ...).
// The MCP layer maps it to JSON-RPC -32602.
type ArgumentsError struct {
	Tool    string
	Path    string
	Keyword string
	Err     error
}

func (e *ArgumentsError) Error() string {
	return fmt.Sprintf("invalid arguments for tool %q at %s: %s: %v", e.Tool, e.Path, e.Keyword, e.Err)
}

func (e *ArgumentsError) Unwrap() error { return e.Err }

// SchemaError reports a tool input schema that is not a valid JSON Schema
// (draft 2020-12) for an arguments object.
type SchemaError struct {
	Tool string
	Err  error
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("tool %q: invalid input schema: %v; fix the schema (JSON Schema 2020-12, type object)", e.Tool, e.Err)
}

func (e *SchemaError) Unwrap() error { return e.Err }

// maxCachedSchemas bounds the resolved-schema cache; schemas beyond it are
// resolved on every call instead of growing memory without limit.
const maxCachedSchemas = 4096

var schemaCache = struct {
	sync.RWMutex
	m map[string]*jsonschema.Resolved
}{m: map[string]*jsonschema.Resolved{}}

// resolveSchema checks and resolves a tool's input schema, caching the
// result by the schema's text.
func resolveSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	key := string(raw)
	schemaCache.RLock()
	rs := schemaCache.m[key]
	schemaCache.RUnlock()
	if rs != nil {
		return rs, nil
	}
	rs, err := compileSchema(raw)
	if err != nil {
		return nil, err
	}
	schemaCache.Lock()
	if len(schemaCache.m) < maxCachedSchemas {
		schemaCache.m[key] = rs
	}
	schemaCache.Unlock()
	return rs, nil
}

func compileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	if _, err := checkSchemaText(raw); err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decode schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("resolve schema: %w", err)
	}
	return rs, nil
}

// checkSchemaText decodes raw (numbers as json.Number) and checks it with
// checkSchema: one JSON object of "type": "object", nothing after it.
func checkSchemaText(raw json.RawMessage) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("schema is empty")
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("schema has data after the JSON value")
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("schema must be a JSON object")
	}
	if root["type"] != "object" {
		return nil, errors.New(`schema must have "type": "object" (tool arguments are an object)`)
	}
	if err := checkSchema("$", root); err != nil {
		return nil, err
	}
	return root, nil
}

// admitSchema is the schema check of [Registry.Register]: it fails exactly
// when resolveSchema would. Compiling a schema for validation (decoding it
// into jsonschema-go's types and resolving it) costs about ten times the
// structural check, and a process registers every built-in tool at start
// but validates arguments for few of them; so a schema that passes
// checkSchemaText and lies within resolvable's subset with no repeated
// object key, where compiling cannot fail, is compiled on first use
// (resolveSchema) instead. Any other schema is compiled here.
func admitSchema(raw json.RawMessage) error {
	schemaCache.RLock()
	cached := schemaCache.m[string(raw)] != nil
	schemaCache.RUnlock()
	if cached {
		return nil
	}
	root, err := checkSchemaText(raw)
	if err != nil {
		return err
	}
	if resolvable(root) && countKeys(root) == countMembers(raw) {
		return nil
	}
	_, err = resolveSchema(raw)
	return err
}

// countKeys returns how many object keys v holds at every depth.
func countKeys(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n += len(v)
		for _, e := range v {
			n += countKeys(e)
		}
	case []any:
		for _, e := range v {
			n += countKeys(e)
		}
	}
	return n
}

// countMembers returns how many object members the valid JSON text raw
// holds: the colons outside strings. It exceeds countKeys of the decoded
// text when some object repeats a key, which encoding/json decodes into a
// struct field once per occurrence but into a map only once (the last),
// so that checkSchema sees less than jsonschema-go does.
func countMembers(raw []byte) int {
	n, inString, escaped := 0, false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString:
			if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ':':
			n++
		}
	}
	return n
}

// uriKeywords are the keywords through which resolving a schema that
// passed checkSchema can still fail (a $ref that does not resolve, a
// duplicate anchor, an $id that is not a URI, $vocabulary values that are
// not booleans).
var uriKeywords = map[string]bool{
	"$id": true, "$anchor": true, "$dynamicAnchor": true, "$ref": true, "$dynamicRef": true, "$vocabulary": true,
}

// int32Keywords are the keywords jsonschema-go decodes into an int32.
var int32Keywords = map[string]bool{
	"minLength": true, "maxLength": true, "minItems": true, "maxItems": true,
	"minProperties": true, "maxProperties": true, "minContains": true, "maxContains": true,
}

// resolvable reports whether v, a document that passed checkSchema, is
// one jsonschema-go is sure to decode and resolve: no object key anywhere
// is one of uriKeywords, every number is a finite float64 (jsonschema-go
// decodes enum, const, examples and extension values with encoding/json),
// and the integer keywords fit an int32. It is conservative: false only
// means "compile now". FuzzAdmitSchema holds it to compileSchema.
func resolvable(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if uriKeywords[k] {
				return false
			}
			if n, ok := e.(json.Number); ok && int32Keywords[k] {
				if i, err := n.Int64(); err != nil || i < math.MinInt32 || i > math.MaxInt32 {
					return false
				}
			}
			if !resolvable(e) {
				return false
			}
		}
	case []any:
		for _, e := range v {
			if !resolvable(e) {
				return false
			}
		}
	case json.Number:
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return false
		}
	}
	return true
}

// keyword kinds for checkSchema.
type kwKind int

const (
	kwSchema kwKind = iota
	kwSchemaMap
	kwSchemaArray
	kwNonNegInt
	kwNumber
	kwPositiveNumber
	kwString
	kwBool
	kwAny
	kwArray
	kwObject
	kwType
	kwStringSet
	kwDependentRequired
	kwSchemaURI
	kwRegexp
	kwRegexpSchemaMap
)

// keywords are the JSON Schema 2020-12 keywords (core, applicator,
// unevaluated, validation, meta-data, format, content vocabularies).
// Anything else is rejected so a typo like "requried" fails at
// registration instead of silently validating nothing; extension
// keywords may be used with an "x-" prefix.
var keywords = map[string]kwKind{
	"$schema": kwSchemaURI, "$id": kwString, "$anchor": kwString, "$dynamicAnchor": kwString,
	"$ref": kwString, "$dynamicRef": kwString, "$defs": kwSchemaMap, "$comment": kwString,
	"$vocabulary": kwObject,

	"allOf": kwSchemaArray, "anyOf": kwSchemaArray, "oneOf": kwSchemaArray, "not": kwSchema,
	"if": kwSchema, "then": kwSchema, "else": kwSchema, "dependentSchemas": kwSchemaMap,
	"prefixItems": kwSchemaArray, "items": kwSchema, "contains": kwSchema,
	"properties": kwSchemaMap, "patternProperties": kwRegexpSchemaMap,
	"additionalProperties": kwSchema, "propertyNames": kwSchema,
	"unevaluatedItems": kwSchema, "unevaluatedProperties": kwSchema,

	"type": kwType, "enum": kwArray, "const": kwAny, "multipleOf": kwPositiveNumber,
	"maximum": kwNumber, "exclusiveMaximum": kwNumber, "minimum": kwNumber, "exclusiveMinimum": kwNumber,
	"maxLength": kwNonNegInt, "minLength": kwNonNegInt, "pattern": kwRegexp,
	"maxItems": kwNonNegInt, "minItems": kwNonNegInt, "uniqueItems": kwBool,
	"maxContains": kwNonNegInt, "minContains": kwNonNegInt,
	"maxProperties": kwNonNegInt, "minProperties": kwNonNegInt,
	"required": kwStringSet, "dependentRequired": kwDependentRequired,

	"title": kwString, "description": kwString, "default": kwAny, "deprecated": kwBool,
	"readOnly": kwBool, "writeOnly": kwBool, "examples": kwArray,
	"format": kwString, "contentEncoding": kwString, "contentMediaType": kwString, "contentSchema": kwSchema,
}

var jsonTypes = map[string]bool{
	"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true,
}

// checkSchema checks the structure of one (sub)schema: what the 2020-12
// meta-schema would reject, which jsonschema-go's Resolve does not check.
func checkSchema(at string, v any) error {
	if _, ok := v.(bool); ok {
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: a schema must be an object or a boolean", at)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		val := obj[k]
		where := at + "." + k
		kind, known := keywords[k]
		if !known {
			if strings.HasPrefix(k, "x-") {
				continue
			}
			return fmt.Errorf("%s: unknown keyword %q (use an x- prefix for extensions)", at, k)
		}
		if err := checkKeyword(where, kind, val); err != nil {
			return err
		}
	}
	return nil
}

func checkKeyword(where string, kind kwKind, val any) error {
	switch kind {
	case kwSchema:
		return checkSchema(where, val)
	case kwSchemaMap, kwRegexpSchemaMap:
		m, ok := val.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: must be an object of schemas", where)
		}
		for name, sub := range m {
			if kind == kwRegexpSchemaMap {
				if _, err := regexp.Compile(name); err != nil {
					return fmt.Errorf("%s: invalid regular expression %q: %v", where, name, err)
				}
			}
			if err := checkSchema(where+"."+name, sub); err != nil {
				return err
			}
		}
	case kwSchemaArray:
		a, ok := val.([]any)
		if !ok || len(a) == 0 {
			return fmt.Errorf("%s: must be a non-empty array of schemas", where)
		}
		for i, sub := range a {
			if err := checkSchema(fmt.Sprintf("%s[%d]", where, i), sub); err != nil {
				return err
			}
		}
	case kwNonNegInt:
		n, ok := val.(json.Number)
		if i, err := n.Int64(); !ok || err != nil || i < 0 {
			return fmt.Errorf("%s: must be a non-negative integer", where)
		}
	case kwNumber, kwPositiveNumber:
		n, ok := val.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil {
			return fmt.Errorf("%s: must be a number", where)
		}
		if kind == kwPositiveNumber && f <= 0 {
			return fmt.Errorf("%s: must be greater than 0", where)
		}
	case kwString:
		if _, ok := val.(string); !ok {
			return fmt.Errorf("%s: must be a string", where)
		}
	case kwSchemaURI:
		if s, ok := val.(string); !ok || s != draft202012 {
			return fmt.Errorf("%s: only %q is supported", where, draft202012)
		}
	case kwRegexp:
		s, ok := val.(string)
		if !ok {
			return fmt.Errorf("%s: must be a string", where)
		}
		if _, err := regexp.Compile(s); err != nil {
			return fmt.Errorf("%s: invalid regular expression: %v", where, err)
		}
	case kwBool:
		if _, ok := val.(bool); !ok {
			return fmt.Errorf("%s: must be a boolean", where)
		}
	case kwArray:
		if _, ok := val.([]any); !ok {
			return fmt.Errorf("%s: must be an array", where)
		}
	case kwObject:
		if _, ok := val.(map[string]any); !ok {
			return fmt.Errorf("%s: must be an object", where)
		}
	case kwType:
		switch t := val.(type) {
		case string:
			if !jsonTypes[t] {
				return fmt.Errorf("%s: unknown type %q", where, t)
			}
		case []any:
			if len(t) == 0 {
				return fmt.Errorf("%s: must not be empty", where)
			}
			seen := map[string]bool{}
			for _, e := range t {
				s, ok := e.(string)
				if !ok || !jsonTypes[s] || seen[s] {
					return fmt.Errorf("%s: must be a type name or an array of distinct type names", where)
				}
				seen[s] = true
			}
		default:
			return fmt.Errorf("%s: must be a type name or an array of type names", where)
		}
	case kwStringSet:
		return checkStringSet(where, val)
	case kwDependentRequired:
		m, ok := val.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: must be an object of string arrays", where)
		}
		for name, sub := range m {
			if err := checkStringSet(where+"."+name, sub); err != nil {
				return err
			}
		}
	case kwAny:
	}
	return nil
}

func checkStringSet(where string, val any) error {
	a, ok := val.([]any)
	if !ok {
		return fmt.Errorf("%s: must be an array of strings", where)
	}
	seen := map[string]bool{}
	for _, e := range a {
		s, ok := e.(string)
		if !ok || seen[s] {
			return fmt.Errorf("%s: must be an array of distinct strings", where)
		}
		seen[s] = true
	}
	return nil
}

// ValidateArgs checks args against t's input schema. Empty args mean {}.
// It returns nil or an *[ArgumentsError] (also for arguments that are not
// JSON); a tool whose schema does not compile yields a *[SchemaError].
func ValidateArgs(t Tool, args json.RawMessage) error {
	rs, err := resolveSchema(t.InputSchema())
	if err != nil {
		return &SchemaError{Tool: t.Name(), Err: err}
	}
	return validateResolved(t.Name(), rs, args)
}

func validateResolved(name string, rs *jsonschema.Resolved, args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return &ArgumentsError{Tool: name, Path: "$", Keyword: "json", Err: fmt.Errorf("arguments are not valid JSON: %w", err)}
	}
	if err := rs.Validate(v); err != nil {
		path, kw := describeValidation(err.Error())
		return &ArgumentsError{Tool: name, Path: path, Keyword: kw, Err: err}
	}
	return nil
}

// describeValidation turns a jsonschema-go message such as
// "validating root: validating /properties/n: minimum: ..." into an
// instance path ("$.n") and keyword ("minimum"), best effort.
func describeValidation(msg string) (path, keyword string) {
	path = "$"
	rest := msg
	for {
		seg, after, ok := strings.Cut(rest, ": ")
		if !ok || !strings.HasPrefix(seg, "validating ") {
			break
		}
		ptr := strings.TrimPrefix(seg, "validating ")
		if strings.HasPrefix(ptr, "/") {
			path = pointerToPath(ptr)
		}
		rest = after
	}
	kw, _, ok := strings.Cut(rest, ":")
	switch {
	case strings.HasPrefix(rest, "unexpected additional properties"):
		kw = "additionalProperties"
	case !ok || strings.ContainsAny(kw, " \"") || kw == "":
		kw = "schema"
	}
	if i := strings.IndexByte(kw, '['); i > 0 {
		kw = kw[:i]
	}
	return path, kw
}

// pointerToPath maps a schema pointer ("/properties/a/items/properties/b")
// to an instance path ("$.a[].b").
func pointerToPath(ptr string) string {
	segs := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	var b strings.Builder
	b.WriteString("$")
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties":
			if i+1 < len(segs) {
				name := strings.ReplaceAll(strings.ReplaceAll(segs[i+1], "~1", "/"), "~0", "~")
				b.WriteString("." + name)
				i++
			}
		case "items", "additionalItems":
			b.WriteString("[]")
		case "prefixItems":
			if i+1 < len(segs) {
				b.WriteString("[" + segs[i+1] + "]")
				i++
			}
		}
	}
	return b.String()
}
