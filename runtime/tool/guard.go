package tool

import (
	"context"
	"encoding/json"
)

// Guard decides whether one call of a tool may run, before the tool runs
// (see [Call]). It returns the context to run
// the tool with and true, or a result that replaces the call (a denial)
// and false. The gate is the one Guard in use.
type Guard func(ctx context.Context, callID string, args json.RawMessage) (context.Context, Result, bool)
