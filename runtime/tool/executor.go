package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/runtime/internal/opt"
)

// Executor defaults.
const (
	DefaultTimeout        = 2 * time.Minute
	DefaultMaxResultBytes = 100_000
	DefaultMaxImageBytes  = 10 << 20
	DefaultStopGrace      = 10 * time.Second
)

// ExecutorOptions configure an [Executor]. The zero value of each field
// means its default.
type ExecutorOptions struct {
	// Timeout bounds one call (default DefaultTimeout). A tool implementing
	// [TimeoutHinter] may ask for another bound per call.
	Timeout time.Duration
	// MaxResultBytes caps the text of a result (default
	// DefaultMaxResultBytes); longer text keeps its head and tail around a
	// "[... N bytes truncated ...]" marker.
	MaxResultBytes int
	// MaxImageBytes caps one image block (default DefaultMaxImageBytes); a
	// result holding a larger image is an IsError result (RESULT_TOO_LARGE).
	MaxImageBytes int
	// StopGrace is how long Execute waits, after the call's context ends,
	// for the tool to stop and report (default DefaultStopGrace). A tool
	// still running after that is abandoned and logged.
	StopGrace time.Duration
	// Logger receives panics and abandoned tools (nil: discard).
	Logger *slog.Logger
}

// Executor runs tools: every caller goes through it. It validates
// arguments against the tool's schema, runs a guard, applies a timeout, recovers
// panics, caps the result size and delivers update strings in order,
// never after Execute returns. It is safe for concurrent use.
type Executor struct {
	timeout   time.Duration
	maxBytes  int
	maxImage  int
	stopGrace time.Duration
	log       *slog.Logger
}

// NewExecutor returns an executor; nil opts means defaults.
func NewExecutor(opts *ExecutorOptions) *Executor {
	var o ExecutorOptions
	if opts != nil {
		o = *opts
	}
	e := &Executor{timeout: o.Timeout, maxBytes: o.MaxResultBytes, maxImage: o.MaxImageBytes, stopGrace: o.StopGrace, log: o.Logger}
	opt.Positive(&e.timeout, DefaultTimeout)
	opt.Positive(&e.maxBytes, DefaultMaxResultBytes)
	opt.Positive(&e.maxImage, DefaultMaxImageBytes)
	opt.Positive(&e.stopGrace, DefaultStopGrace)
	if e.log == nil {
		e.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return e
}

type outcome struct {
	res      Result
	err      error
	panicked bool
}

// updater serialises update calls and stops them once the call is over.
type updater struct {
	mu     sync.Mutex
	fn     func(string)
	closed bool
}

func (u *updater) send(s string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed || u.fn == nil {
		return
	}
	u.fn(s)
}

// close waits for an update in progress and drops all later ones.
func (u *updater) close() {
	u.mu.Lock()
	u.closed = true
	u.mu.Unlock()
}

// Execute runs t with args and always returns a Result: invalid arguments
// (reason INVALID_ARGUMENTS, Details["invalid_arguments"]=true), a returned
// error (TOOL_ERROR), a panic (PANIC), the timeout (TIMEOUT,
// Details["timeout"]=true) and a cancelled ctx (CANCELLED,
// Details["cancelled"]=true) are IsError results. update may be nil.
func (e *Executor) Execute(ctx context.Context, t Tool, callID string, args json.RawMessage, update func(string)) Result {
	return e.Run(ctx, t, Call{ID: callID, Args: args, Update: update})
}

// Call is one call of a tool for [Executor.Run].
type Call struct {
	// ID is the call id the tool sees.
	ID string
	// Args is the arguments object (empty means {}).
	Args json.RawMessage
	// Update receives the tool's progress lines (nil: dropped).
	Update func(string)
	// Guard, when set, decides before the tool runs: outside the call's
	// timeout (an approval question may wait longer than a tool may run),
	// with a panic turned into a PANIC result. A result it returns is the
	// call's result (made IsError).
	Guard Guard
	// ArgsFirst checks the arguments before the guard. By default the guard
	// goes first, so a caller that may not use a tool learns nothing about
	// its arguments; MCP tool_call answers invalid arguments of an exposed
	// tool as a protocol error before any gate decision.
	ArgsFirst bool
}

// Run is [Executor.Execute] for a [Call]: the argument check and the
// guard in the call's order, then the tool.
func (e *Executor) Run(ctx context.Context, t Tool, call Call) Result {
	if t == nil {
		return ErrorResult(ReasonToolError, "no tool given to execute")
	}
	callID, args := call.ID, call.Args
	if call.ArgsFirst {
		if res, ok := checkArgs(t, args); !ok {
			return res
		}
	}
	if call.Guard != nil {
		if ctx.Err() != nil {
			return cancelledResult(t.Name(), false)
		}
		gctx, res, allowed := e.runGuard(ctx, t.Name(), call.Guard, callID, args)
		if !allowed {
			e.capResult(t.Name(), &res)
			return res
		}
		ctx = gctx
	}
	if !call.ArgsFirst {
		if res, ok := checkArgs(t, args); !ok {
			return res
		}
	}
	update := call.Update
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if ctx.Err() != nil {
		return cancelledResult(t.Name(), false)
	}
	timeout := e.timeout
	if h, ok := t.(TimeoutHinter); ok {
		if d := h.TimeoutHint(args); d > 0 {
			timeout = d
		}
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	u := &updater{fn: update}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				e.log.Error("runtime tool panicked", "tool", t.Name(), "call_id", callID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				o = outcome{panicked: true, err: fmt.Errorf("%v", p)}
			}
			done <- o
		}()
		o.res, o.err = t.Execute(cctx, callID, args, u.send)
	}()

	var o outcome
	stopped := true
	select {
	case o = <-done:
	case <-cctx.Done():
		grace := time.NewTimer(e.stopGrace)
		select {
		case o = <-done:
		case <-grace.C:
			stopped = false
			e.log.Warn("runtime tool did not stop after its context ended; abandoning it", "tool", t.Name(), "call_id", callID)
		}
		grace.Stop()
	}
	u.close()

	ownTimeout := cctx.Err() != nil && ctx.Err() == nil
	var res Result
	switch {
	case o.panicked:
		res = ErrorResult(ReasonPanic, fmt.Sprintf("tool %s panicked: %v", t.Name(), o.err))
	case !stopped || (o.err != nil && cctx.Err() != nil):
		res = cancelledResult(t.Name(), ownTimeout)
	case o.err != nil:
		res = ErrorResult(ReasonToolError, fmt.Sprintf("tool %s failed: %v", t.Name(), o.err))
	default:
		res = o.res
		if res.IsError && cctx.Err() != nil && res.Reason == "" {
			if ownTimeout {
				res.Reason = ReasonTimeout
				res.Details = withDetail(res.Details, DetailTimeout, true)
			} else {
				res.Reason = ReasonCancelled
				res.Details = withDetail(res.Details, DetailCancelled, true)
			}
		}
		if res.IsError && len(res.Content) == 0 {
			res.Content = []Content{Text(fmt.Sprintf("tool %s failed", t.Name()))}
		}
	}
	e.capResult(t.Name(), &res)
	return res
}

// runGuard runs a guard, turning a panic into a PANIC result.
func (e *Executor) runGuard(ctx context.Context, name string, guard Guard, callID string, args json.RawMessage) (gctx context.Context, res Result, allowed bool) {
	defer func() {
		if p := recover(); p != nil {
			e.log.Error("runtime tool guard panicked", "tool", name, "call_id", callID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			gctx, res, allowed = nil, ErrorResult(ReasonPanic, fmt.Sprintf("guard of tool %s panicked: %v", name, p)), false
		}
	}()
	gctx, res, allowed = guard(ctx, callID, args)
	if allowed && gctx == nil {
		gctx = ctx
	}
	if !allowed {
		if !res.IsError {
			res.IsError = true
		}
		if len(res.Content) == 0 {
			res.Content = []Content{Text(fmt.Sprintf("tool %s was not allowed to run", name))}
		}
	}
	return gctx, res, allowed
}

// checkArgs validates args against t's schema: the one place a call's
// arguments are checked.
func checkArgs(t Tool, args json.RawMessage) (Result, bool) {
	err := ValidateArgs(t, args)
	if err == nil {
		return Result{}, true
	}
	var se *SchemaError
	if errors.As(err, &se) {
		return ErrorResult(ReasonToolError, err.Error()), false
	}
	res := ErrorResult(ReasonInvalidArguments, err.Error())
	res.InvalidArguments = true
	return res, false
}

func cancelledResult(name string, timeout bool) Result {
	if timeout {
		r := ErrorResult(ReasonTimeout, fmt.Sprintf("tool %s timed out", name))
		r.Details = map[string]any{DetailTimeout: true}
		return r
	}
	r := ErrorResult(ReasonCancelled, fmt.Sprintf("tool %s was cancelled", name))
	r.Details = map[string]any{DetailCancelled: true}
	return r
}

// withDetail returns d (allocated if nil, copied otherwise so a tool's
// shared map is never mutated) with k set to v.
func withDetail(d map[string]any, k string, v any) map[string]any {
	out := make(map[string]any, len(d)+2)
	for key, val := range d {
		out[key] = val
	}
	out[k] = v
	return out
}

// capResult applies the text and image limits: text over the limit keeps
// its head and tail around a marker; an image over the limit fails the
// whole call (RESULT_TOO_LARGE), since no part of an image is useful.
func (e *Executor) capResult(name string, r *Result) {
	total := 0
	for _, c := range r.Content {
		switch c.Type {
		case TypeText:
			total += len(c.Text)
		case TypeImage:
			if len(c.Data) > e.maxImage {
				*r = ErrorResult(ReasonResultTooLarge, fmt.Sprintf(
					"tool %s returned an image of %d bytes (%s), larger than the limit of %d bytes", name, len(c.Data), c.MediaType, e.maxImage))
				return
			}
		}
	}
	if total <= e.maxBytes {
		return
	}
	content := make([]Content, 0, len(r.Content))
	budget := e.maxBytes
	for _, c := range r.Content {
		switch {
		case c.Type == TypeText && len(c.Text) <= budget:
			budget -= len(c.Text)
		case c.Type == TypeText:
			c.Text, _ = clip.Middle(c.Text, budget)
			budget = 0
		}
		content = append(content, c)
	}
	r.Content = content
	r.Details = withDetail(r.Details, DetailTruncated, true)
}
