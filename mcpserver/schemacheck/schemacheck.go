// Package schemacheck validates MCP frames against the official 2025-11-25
// protocol schema (an embedded, unmodified copy of
// schema/2025-11-25/schema.json from modelcontextprotocol).
//
// Tests use it to check every frame a server writes:
//
//	v, err := schemacheck.New()
//	...
//	if err := v.ServerFrame(line, "tools/call"); err != nil {
//		t.Error(err)
//	}
//
// or wrap the client's transport so every frame the client reads is checked:
//
//	transport := schemacheck.Wrap(&mcp.CommandTransport{Command: cmd}, v, func(err error) { t.Error(err) })
//
// A frame is checked as a whole (JSONRPCResultResponse, JSONRPCErrorResponse
// or JSONRPCNotification) and, where the method is known, by its typed
// definition: the result of a response against the result type of the
// request it answers (InitializeResult, ListToolsResult, CallToolResult,
// EmptyResult for ping, ...), a notification against its notification type
// (ProgressNotification, ...).
//
// The schema is compiled and frames are validated by contracts/schema, the
// project's one JSON Schema validator; frames are decoded with numbers kept
// exact, so an id of 1.5 fails RequestId and one of 12345678901234567890
// passes.
//
// There is no allowance for "id": null: the MCP schema expresses an error
// whose id cannot be determined by leaving "id" out, and its RequestId has
// no null, so a null id fails (as it fails the TypeScript SDK's parser).
package schemacheck

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/internal/schema"
)

// SchemaJSON is the embedded MCP 2025-11-25 schema, byte for byte.
//
//go:embed mcp-2025-11-25.schema.json
var SchemaJSON []byte

// Validator checks values against the definitions ($defs) of one MCP schema,
// compiled with the contracts/schema validator. It is safe for concurrent
// use.
type Validator struct {
	defs        map[string]*schema.Schema
	requestDefs map[string]string // request method -> definition name
	notifyDefs  map[string]string // notification method -> definition name
	resultDefs  map[string]string // request method -> result definition name
}

var (
	defaultOnce sync.Once
	defaultV    *Validator
	defaultErr  error
)

// New returns a validator for the embedded 2025-11-25 schema. Every call
// returns the same validator.
func New() (*Validator, error) {
	defaultOnce.Do(func() { defaultV, defaultErr = Parse(SchemaJSON) })
	return defaultV, defaultErr
}

// Parse returns a validator for an MCP schema document (a JSON Schema
// 2020-12 document whose $defs hold the protocol types). The whole document
// is compiled: a definition that does not compile fails Parse.
func Parse(doc []byte) (*Validator, error) {
	root, err := schema.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("load MCP schema: %w", err)
	}
	obj, _ := root.(map[string]any)
	rawDefs, _ := obj["$defs"].(map[string]any)
	if len(rawDefs) == 0 {
		return nil, errors.New("load MCP schema: no $defs")
	}
	for _, need := range []string{"JSONRPCResultResponse", "JSONRPCErrorResponse", "JSONRPCNotification", "JSONRPCRequest", "EmptyResult"} {
		if _, ok := rawDefs[need]; !ok {
			return nil, fmt.Errorf("load MCP schema: no $defs/%s", need)
		}
	}
	compiled, err := schema.CompileValue(root)
	if err != nil {
		return nil, fmt.Errorf("load MCP schema: %w", err)
	}
	v := &Validator{
		defs:        make(map[string]*schema.Schema, len(rawDefs)),
		requestDefs: map[string]string{},
		notifyDefs:  map[string]string{},
		resultDefs:  map[string]string{},
	}
	for name, def := range rawDefs {
		if v.defs[name], err = compiled.Resolve("#/$defs/" + schema.EscapeToken(name)); err != nil {
			return nil, fmt.Errorf("load MCP schema: %w", err)
		}
		method, ok := constMethod(def)
		if !ok {
			continue
		}
		switch {
		case strings.HasSuffix(name, "Notification"):
			v.notifyDefs[method] = name
		case strings.HasSuffix(name, "Request"):
			v.requestDefs[method] = name
			result := strings.TrimSuffix(name, "Request") + "Result"
			if _, ok := rawDefs[result]; !ok {
				result = "EmptyResult"
			}
			v.resultDefs[method] = result
		}
	}
	return v, nil
}

// constMethod returns the "const" of a definition's "method" property.
func constMethod(def any) (string, bool) {
	d, _ := def.(map[string]any)
	props, _ := d["properties"].(map[string]any)
	m, _ := props["method"].(map[string]any)
	method, ok := m["const"].(string)
	return method, ok
}

// ResultDef returns the name of the definition that results of method must
// satisfy, such as "CallToolResult" for "tools/call".
func (v *Validator) ResultDef(method string) (string, bool) {
	d, ok := v.resultDefs[method]
	return d, ok
}

// Def validates a JSON value against the named definition, such as
// "CallToolResult". Numbers are compared exactly as written.
func (v *Validator) Def(name string, value []byte) error {
	inst, err := schema.Decode(value)
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return v.defValue(name, inst)
}

func (v *Validator) defValue(name string, inst any) error {
	s, ok := v.defs[name]
	if !ok {
		return fmt.Errorf("no definition %q in the MCP schema", name)
	}
	if f := s.Validate(inst); f != nil {
		return fmt.Errorf("does not match $defs/%s: %s", name, f)
	}
	return nil
}

// ServerFrame validates one frame a server wrote. requestMethod is the
// method of the request the frame answers, when the frame is a response
// and the method is known; pass "" otherwise (the result is then checked
// only as a Result). A frame that is a request (servers may send requests
// such as ping) is checked as JSONRPCRequest and by its method.
func (v *Validator) ServerFrame(frame []byte, requestMethod string) error {
	frame = bytes.TrimSpace(frame)
	if bytes.ContainsAny(frame, "\n\r") {
		return errors.New("frame spans more than one line")
	}
	decoded, err := schema.Decode(frame)
	if err != nil {
		return fmt.Errorf("frame is not JSON: %w", err)
	}
	obj, ok := decoded.(map[string]any)
	if !ok {
		return errors.New("frame is not a JSON object")
	}
	if err := v.message(obj, requestMethod); err != nil {
		return fmt.Errorf("frame %s: %w", clip.String(string(frame), 300), err)
	}
	return nil
}

func (v *Validator) message(obj map[string]any, requestMethod string) error {
	method, hasMethod := obj["method"].(string)
	_, hasID := obj["id"]
	switch {
	case hasMethod && hasID:
		if err := v.defValue("JSONRPCRequest", obj); err != nil {
			return err
		}
		if def, ok := v.requestDefs[method]; ok {
			return v.defValue(def, obj)
		}
		return nil
	case hasMethod:
		if err := v.defValue("JSONRPCNotification", obj); err != nil {
			return err
		}
		if def, ok := v.notifyDefs[method]; ok {
			return v.defValue(def, obj)
		}
		return nil
	}
	if _, isErr := obj["error"]; isErr {
		if _, isResult := obj["result"]; isResult {
			return errors.New(`a response has both "result" and "error"`)
		}
		return v.defValue("JSONRPCErrorResponse", obj)
	}
	if err := v.defValue("JSONRPCResultResponse", obj); err != nil {
		return err
	}
	def := "Result"
	if requestMethod != "" {
		d, ok := v.resultDefs[requestMethod]
		if !ok {
			return fmt.Errorf("no result type for method %q in the MCP schema", requestMethod)
		}
		def = d
	}
	return v.defValue(def, obj["result"])
}
