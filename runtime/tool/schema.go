package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/openprogram/openprogram/contracts/schema"
)

// draft202012 is the only $schema value a tool schema may declare.
const draft202012 = "https://json-schema.org/draft/2020-12/schema"

// ArgumentsError reports tool arguments that are not JSON or do not match
// the tool's input schema. Path is where the problem is ("$", "$.path"; for
// required the missing property, for additionalProperties the unexpected
// one), Keyword the failed schema keyword ("required", "type", "json", ...):
// the first failure by (Path, Keyword). Its text never repeats argument
// values. The MCP layer maps it to JSON-RPC -32602.
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

// maxCachedSchemas bounds the compiled-schema cache; schemas beyond it are
// compiled on every call instead of growing memory without limit.
const maxCachedSchemas = 4096

var schemaCache = struct {
	sync.RWMutex
	m map[string]*schema.Schema
}{m: map[string]*schema.Schema{}}

// resolveSchema checks and compiles a tool's input schema, caching the
// result by the schema's text.
func resolveSchema(raw json.RawMessage) (*schema.Schema, error) {
	if rs := cachedSchema(raw); rs != nil {
		return rs, nil
	}
	rs, err := compileSchema(raw)
	if err != nil {
		return nil, err
	}
	cacheSchema(raw, rs)
	return rs, nil
}

// cachedSchema is the compiled schema cached for raw, or nil.
func cachedSchema(raw json.RawMessage) *schema.Schema {
	schemaCache.RLock()
	defer schemaCache.RUnlock()
	return schemaCache.m[string(raw)]
}

// cacheSchema caches rs as the compiled schema of raw, while the cache has
// room.
func cacheSchema(raw json.RawMessage, rs *schema.Schema) {
	schemaCache.Lock()
	defer schemaCache.Unlock()
	if len(schemaCache.m) < maxCachedSchemas {
		schemaCache.m[string(raw)] = rs
	}
}

func compileSchema(raw json.RawMessage) (*schema.Schema, error) {
	root, _, err := checkSchemaText(raw)
	if err != nil {
		return nil, err
	}
	return schema.CompileValue(root)
}

// checkSchemaText decodes raw (numbers as json.Number) and checks it with
// checkSchema: one JSON object of "type": "object", nothing after it. lazy
// reports that the schema uses none of compileKeywords, so compiling it
// cannot fail.
func checkSchemaText(raw json.RawMessage) (root map[string]any, lazy bool, err error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, false, errors.New("schema is empty")
	}
	doc, err := schema.Decode(raw)
	if err != nil {
		return nil, false, fmt.Errorf("schema is not JSON: %w", err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, false, errors.New("schema must be a JSON object")
	}
	if root["type"] != "object" {
		return nil, false, errors.New(`schema must have "type": "object" (tool arguments are an object)`)
	}
	c := &schemaCheck{}
	if err := c.check("$", root); err != nil {
		return nil, false, err
	}
	return root, !c.compileNow, nil
}

// admitSchema is the schema check of [Registry.Register]: it fails exactly
// when resolveSchema would. Compiling a schema for validation costs several
// times the structural check, and a process registers every built-in tool
// at start but validates arguments for few of them; so a schema that passes
// checkSchemaText without compileKeywords, where compiling cannot fail, is
// compiled on first use (resolveSchema) instead. Any other schema is
// compiled here, from the value checkSchemaText decoded, and cached. FuzzAdmitSchema holds the two to agreeing.
func admitSchema(raw json.RawMessage) error {
	if cachedSchema(raw) != nil {
		return nil
	}
	root, lazy, err := checkSchemaText(raw)
	if err != nil || lazy {
		return err
	}
	// Compile the document just checked rather than decoding raw again.
	rs, err := schema.CompileValue(root)
	if err != nil {
		return err
	}
	cacheSchema(raw, rs)
	return nil
}

// compileKeywords are the keywords through which compiling a schema that
// passed checkSchema can still fail: references that do not resolve,
// duplicate anchors, an $id that is not a URI, $vocabulary values, and
// patterns that are valid RE2 but have no ECMA-262 equivalent the validator
// accepts (JSON Schema patterns are ECMA-262).
var compileKeywords = map[string]bool{
	"$id": true, "$anchor": true, "$dynamicAnchor": true, "$ref": true, "$dynamicRef": true, "$vocabulary": true,
	"pattern": true, "patternProperties": true,
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

// schemaCheck walks a schema document for checkSchemaText.
type schemaCheck struct {
	compileNow bool // a keyword of compileKeywords occurs
}

// check checks the structure of one (sub)schema: keywords the 2020-12
// vocabularies define (or "x-" extensions) with values of the right shape.
// The validator checks the meta-schema again when it compiles; this walk
// also refuses unknown keywords, and is cheap enough for Register.
func (c *schemaCheck) check(at string, v any) error {
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
		if compileKeywords[k] {
			c.compileNow = true
		}
		if !known {
			if strings.HasPrefix(k, "x-") {
				continue
			}
			return fmt.Errorf("%s: unknown keyword %q (use an x- prefix for extensions)", at, k)
		}
		if err := c.keyword(where, kind, val); err != nil {
			return err
		}
	}
	return nil
}

func (c *schemaCheck) keyword(where string, kind kwKind, val any) error {
	switch kind {
	case kwSchema:
		return c.check(where, val)
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
			if err := c.check(where+"."+name, sub); err != nil {
				return err
			}
		}
	case kwSchemaArray:
		a, ok := val.([]any)
		if !ok || len(a) == 0 {
			return fmt.Errorf("%s: must be a non-empty array of schemas", where)
		}
		for i, sub := range a {
			if err := c.check(fmt.Sprintf("%s[%d]", where, i), sub); err != nil {
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
// Numbers are checked exactly as written (12345678901234567890 is an
// integer, 1e400 a number). args is never modified.
func ValidateArgs(t Tool, args json.RawMessage) error {
	rs, err := resolveSchema(t.InputSchema())
	if err != nil {
		return &SchemaError{Tool: t.Name(), Err: err}
	}
	return validateCompiled(t.Name(), rs, args)
}

// errSchemaMismatch is the Err of an [ArgumentsError] for arguments that
// are JSON but fail the schema: the text names no value.
var errSchemaMismatch = errors.New("arguments do not match the tool's input schema; see its inputSchema")

func validateCompiled(name string, rs *schema.Schema, args json.RawMessage) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	v, err := schema.Decode(args)
	if err != nil {
		return &ArgumentsError{Tool: name, Path: "$", Keyword: "json", Err: fmt.Errorf("arguments are not valid JSON: %w", err)}
	}
	if f := rs.Validate(v); f != nil {
		return &ArgumentsError{Tool: name, Path: f.Path, Keyword: f.Keyword, Err: errSchemaMismatch}
	}
	return nil
}
