package tool

import (
	"context"
	"encoding/json"
	"time"

	"github.com/openprogram/openprogram/authz"
)

// Guard decides whether one call of a tool may run, before anything else
// happens to it. It returns the context to run the tool with and true, or
// a result that replaces the call (a denial) and false. The gate is a
// Guard.
type Guard func(ctx context.Context, callID string, args json.RawMessage) (context.Context, Result, bool)

// Guarded returns t behind guard. The [Executor] runs the guard first:
// before validating the arguments (a caller that may not use a tool learns
// nothing about its arguments) and outside the call's timeout (an approval
// question may wait longer than a tool may run). Calling Execute on the
// returned tool directly runs the guard, validates the arguments and runs
// t. The returned tool reports t's name, description, schema, capability
// and timeout hint.
func Guarded(t Tool, guard Guard) Tool { return &guarded{inner: t, guard: guard} }

type guarded struct {
	inner Tool
	guard Guard
}

func (g *guarded) Name() string                 { return g.inner.Name() }
func (g *guarded) Description() string          { return g.inner.Description() }
func (g *guarded) InputSchema() json.RawMessage { return g.inner.InputSchema() }
func (g *guarded) Capability() authz.Capability { return g.inner.Capability() }

// TimeoutHint forwards the inner tool's hint.
func (g *guarded) TimeoutHint(args json.RawMessage) time.Duration {
	if h, ok := g.inner.(TimeoutHinter); ok {
		return h.TimeoutHint(args)
	}
	return 0
}

// Execute runs the guard, then validates args and runs the inner tool.
func (g *guarded) Execute(ctx context.Context, callID string, args json.RawMessage, update func(string)) (Result, error) {
	ctx, res, ok := g.guard(ctx, callID, args)
	if !ok {
		return res, nil
	}
	if err := ValidateArgs(g.inner, args); err != nil {
		return ErrorResult(ReasonInvalidArguments, err.Error()), nil
	}
	return g.inner.Execute(ctx, callID, args, update)
}
