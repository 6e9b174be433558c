package runtime

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/openprogram/openprogram/internal/clip"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/gate"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
)

// ToolCall is one call of a registered runtime tool: by the model inside
// a turn, or by an MCP client's tool_call.
type ToolCall struct {
	// SessionID is the session the call serves ("" for none): approval
	// questions are raised there and the tool's CallInfo carries it.
	SessionID string
	// RequestID is copied into the tool.start and tool.end events (a
	// turn's request id; "" outside a turn).
	RequestID string
	// ID is the call id the tool sees.
	ID string
	// Name is the registered tool to run.
	Name string
	// Arguments is the arguments object as received (empty means {}).
	Arguments json.RawMessage
	// Update receives the tool's progress lines (nil: dropped).
	Update func(string)
	// ArgsFirst checks the arguments against the tool's schema before the
	// gate (see [tool.Call]); by default the gate decides first.
	ArgsFirst bool
	// Observe receives tool.start, question.asked, approval.standing and
	// tool.end of the call (nil: none). tool.end says whether the call was
	// denied.
	Observe events.Observer
}

// RunTool runs one tool call for sp: the one place where the gate and the
// executor are put together. It looks call.Name up in Options.Registry (an
// unregistered name is an UNKNOWN_TOOL result), runs the gate
// ([gate.Guard]: authz.Decide for sp, the tool's declared capability,
// approval through Options.Questions) and the argument check in call's
// order, then the tool through Options.Executor, with a [tool.CallInfo]
// of sp and call.SessionID. A denial is an IsError result:
// [tool.Result.Denial] reads it; arguments the schema refused are
// [tool.Result.ArgumentsRejected]. tool.start and tool.end events frame
// the call for call.Observe (tool.end says whether it was denied).
func (r *Runtime) RunTool(ctx context.Context, sp authz.Speaker, call ToolCall) tool.Result {
	name, callID := clip.String(call.Name, events.MaxToolLen), clip.String(call.ID, events.MaxCallIDLen)
	call.Observe.Emit(events.ToolStart, call.SessionID, events.ToolStartData{RequestID: call.RequestID, CallID: callID, Tool: name})
	tl, ok := r.registry().Get(call.Name)
	// An unregistered name is the model's text: telemetry never carries it.
	spanName := "_OTHER"
	if ok {
		spanName = name
	}
	ctx, span := startToolSpan(ctx, spanName, callID)
	var res tool.Result
	defer func() {
		r.captureTool(span, call.Arguments, res)
		endToolSpan(ctx, span, res, ok, name)
	}()
	if !ok {
		res = tool.ErrorResult(reasonUnknownTool, fmt.Sprintf("tool %q is not available; use one of the tools you were given", name))
	} else {
		guard := gate.Guard(tl, sp, &gate.Options{Questions: r.opts.Questions, SessionID: call.SessionID, Standing: r.opts.Standing, Observe: call.Observe})
		cctx := tool.WithCall(ctx, tool.CallInfo{SessionID: call.SessionID, Speaker: sp})
		res = r.exec.Run(cctx, tl, tool.Call{ID: call.ID, Args: call.Arguments, Update: call.Update, Guard: guard, ArgsFirst: call.ArgsFirst})
	}
	end := events.ToolEndData{RequestID: call.RequestID, CallID: callID, Tool: name, IsError: res.IsError}
	if d, denied := res.Denial(); denied {
		end.Denied, end.ReasonCode, end.Capability = true, d.ReasonCode, string(d.Capability)
	}
	call.Observe.Emit(events.ToolEnd, call.SessionID, end)
	return res
}

// registry is Options.Registry, or an empty one.
func (r *Runtime) registry() *tool.Registry {
	if r.opts.Registry == nil {
		return emptyRegistry
	}
	return r.opts.Registry
}

var emptyRegistry = tool.NewRegistry()

// Registry returns the runtime's tool registry (Options.Registry; an empty
// one when none was given).
func (r *Runtime) Registry() *tool.Registry { return r.registry() }

// Questions returns Options.Questions (nil when none was given).
func (r *Runtime) Questions() *questions.Registry { return r.opts.Questions }
