package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/openprogram/openprogram/internal/schema"
)

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
// result by the schema's text. [Registry.Register] calls it, so a tool's
// schema is compiled once, when it is registered, and never again.
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

// compileSchema compiles a tool input schema with the [schema] package:
// one JSON object with "type": "object" (tool arguments are an object),
// nothing after it, in the 2020-12 dialect (a "$schema" must name it).
// Keywords starting with "x-" are extensions, ignored; any other keyword
// the validator does not know is an error, so a typo like "requried" fails
// at registration instead of silently validating nothing.
func compileSchema(raw json.RawMessage) (*schema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("schema is empty")
	}
	doc, err := schema.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("schema must be a JSON object")
	}
	if root["type"] != "object" {
		return nil, errors.New(`schema must have "type": "object" (tool arguments are an object)`)
	}
	if d, present := root["$schema"]; present && d != schema.Draft202012 {
		return nil, fmt.Errorf(`"$schema": only %q is supported`, schema.Draft202012)
	}
	return schema.CompileValue(root, schema.AllowAnnotationPrefix("x-"))
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
