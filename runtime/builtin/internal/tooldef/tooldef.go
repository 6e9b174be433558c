// Package tooldef holds the helpers the built-in tools share: the shape of
// their argument schemas, typed argument decoding and tool-reported
// failures.
package tooldef

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/tool"
)

// Object is the JSON Schema (draft 2020-12) of a built-in tool's
// arguments: a closed object ("additionalProperties": false) with
// properties, each one member `"name": {...}`, of which required must be
// given. Every built-in tool states its arguments with it.
func Object(required []string, properties ...string) string {
	var b strings.Builder
	b.WriteString("{\n  \"$schema\": \"https://json-schema.org/draft/2020-12/schema\",\n  \"type\": \"object\",\n  \"properties\": {")
	if len(properties) > 0 {
		b.WriteString("\n    " + strings.Join(properties, ",\n    ") + "\n  ")
	}
	b.WriteString("},\n")
	if len(required) > 0 {
		q := make([]string, len(required))
		for i, r := range required {
			q[i] = strconv.Quote(r)
		}
		b.WriteString("  \"required\": [" + strings.Join(q, ", ") + "],\n")
	}
	b.WriteString("  \"additionalProperties\": false\n}")
	return b.String()
}

// Failure is a failure the tool reports to its caller (an IsError result
// with a reason code), as opposed to an unexpected error.
type Failure struct {
	Reason  string
	Msg     string
	Details map[string]any
}

func (f *Failure) Error() string { return f.Msg }

// Fail returns a *Failure with a formatted message.
func Fail(reason, format string, args ...any) error {
	return &Failure{Reason: reason, Msg: fmt.Sprintf(format, args...)}
}

// New returns a tool whose arguments are decoded into A before run is
// called. A *Failure returned by run becomes an IsError result; context
// errors and other errors are returned for the executor to classify.
func New[A any](name, desc, schema string, capab authz.Capability,
	run func(ctx context.Context, callID string, args A, update func(string)) (tool.Result, error)) *tool.Func {
	return &tool.Func{
		ToolName: name,
		Desc:     desc,
		Schema:   json.RawMessage(schema),
		Cap:      capab,
		Run: func(ctx context.Context, callID string, raw json.RawMessage, update func(string)) (tool.Result, error) {
			var a A
			if len(bytes.TrimSpace(raw)) > 0 {
				if err := json.Unmarshal(raw, &a); err != nil {
					return tool.ErrorResult(tool.ReasonInvalidArguments, fmt.Sprintf("%s: decode arguments: %v", name, err)), nil
				}
			}
			res, err := run(ctx, callID, a, update)
			var f *Failure
			if errors.As(err, &f) {
				r := tool.ErrorResult(f.Reason, f.Msg)
				if r.Details == nil && len(f.Details) > 0 {
					r.Details = map[string]any{}
				}
				for k, v := range f.Details {
					r.Details[k] = v
				}
				return r, nil
			}
			return res, err
		},
	}
}

// JSON returns a successful result holding v as compact JSON (no HTML
// escaping).
func JSON(v any) (tool.Result, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return tool.Result{}, fmt.Errorf("encode result: %w", err)
	}
	return tool.TextResult(string(bytes.TrimRight(buf.Bytes(), "\n"))), nil
}
