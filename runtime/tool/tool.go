package tool

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/sessions"
)

// Content types of [Content.Type].
const (
	TypeText  = "text"
	TypeImage = "image"
)

// Content is one block of a tool result: text, or an image given as bytes
// and a media type ("image/png", ...).
type Content struct {
	Type      string
	Text      string
	Data      []byte
	MediaType string
}

// Text returns a text content block.
func Text(s string) Content { return Content{Type: TypeText, Text: s} }

// Image returns an image content block.
func Image(data []byte, mediaType string) Content {
	return Content{Type: TypeImage, Data: data, MediaType: mediaType}
}

// Keys used in [Result.Details]. Details are diagnostics only: nothing
// decides on them ([Result.IsError], [Result.Reason], [Result.Denied] and
// [Result.InvalidArguments] are the typed outcome).
const (
	DetailTimeout   = "timeout"
	DetailCancelled = "cancelled"
	DetailTruncated = "truncated"
)

// Reason codes the [Executor] sets in [Result.Reason].
const (
	ReasonInvalidArguments = "INVALID_ARGUMENTS"
	ReasonToolError        = "TOOL_ERROR"
	ReasonPanic            = "PANIC"
	ReasonTimeout          = "TIMEOUT"
	ReasonCancelled        = "CANCELLED"
	ReasonResultTooLarge   = "RESULT_TOO_LARGE"
)

// Result is what a tool execution produced. IsError is the only failure
// flag: timeouts, panics, non-zero exits, denials and failures a tool
// reports all set it. Reason, Denied and InvalidArguments say why, typed;
// Details holds diagnostics (exit code, timeout, ...) and is never the
// source of truth.
type Result struct {
	Content []Content
	IsError bool
	// Reason is the reason code of a failure: a tool's own (each tool
	// package lists its codes), the executor's (the Reason constants here)
	// or the gate's (an authz reason code). Empty on success.
	Reason string
	// Denied is the gate's decision when the call was denied before the
	// tool ran (or the tool refused the caller's authority itself); nil
	// otherwise. A denied result has IsError set.
	Denied *authz.Decision
	// InvalidArguments reports that the tool's input schema refused the
	// call's arguments, so nothing ran (a tool's own INVALID_ARGUMENTS
	// failure leaves it false).
	InvalidArguments bool
	// Details are diagnostics only.
	Details map[string]any
}

// Text returns the concatenation of the result's text blocks, separated by
// newlines.
func (r Result) Text() string {
	var n int
	for _, c := range r.Content {
		if c.Type == TypeText {
			n += len(c.Text) + 1
		}
	}
	b := make([]byte, 0, n)
	for _, c := range r.Content {
		if c.Type != TypeText {
			continue
		}
		if len(b) > 0 {
			b = append(b, '\n')
		}
		b = append(b, c.Text...)
	}
	return string(b)
}

// ReasonCode returns [Result.Reason].
func (r Result) ReasonCode() string { return r.Reason }

// Denial returns the decision of a denied call ([Result.Denied]): its
// reason code, capability and message.
func (r Result) Denial() (authz.Decision, bool) {
	if r.Denied == nil {
		return authz.Decision{}, false
	}
	return *r.Denied, true
}

// ArgumentsRejected reports [Result.InvalidArguments]: the tool's input
// schema refused the call's arguments, so nothing ran.
func (r Result) ArgumentsRejected() bool { return r.InvalidArguments }

// DeniedResult is the result of a call refused by d: IsError, the
// decision's message as the text, d's reason code and d itself.
func DeniedResult(d authz.Decision) Result {
	return Result{Content: []Content{Text(d.Message)}, IsError: true, Reason: d.ReasonCode, Denied: &d}
}

// TextResult returns a successful result holding one text block.
func TextResult(s string) Result { return Result{Content: []Content{Text(s)}} }

// ErrorResult returns a failed result holding one text block, with
// reasonCode as its [Result.Reason].
func ErrorResult(reasonCode, msg string) Result {
	return Result{Content: []Content{Text(msg)}, IsError: true, Reason: reasonCode}
}

// Tool is a runtime tool. Execute is called by an [Executor] (never
// directly by callers), with arguments already validated against
// InputSchema. update reports progress lines; cancellation is ctx.
// A tool reports its own failures as a Result with IsError set; a returned
// error is an unexpected failure and becomes an IsError result too.
type Tool interface {
	Name() string
	Description() string
	// InputSchema is a JSON Schema (draft 2020-12) for the arguments object.
	InputSchema() json.RawMessage
	// Capability is the authz capability a caller needs to run the tool.
	Capability() authz.Capability
	Execute(ctx context.Context, callID string, args json.RawMessage, update func(string)) (Result, error)
}

// TimeoutHinter is implemented by tools that bound their own running time
// (bash's timeout_ms). When it returns a positive duration the [Executor]
// uses it instead of its default timeout for that call.
type TimeoutHinter interface {
	TimeoutHint(args json.RawMessage) time.Duration
}

// Func is a [Tool] built from fields.
type Func struct {
	ToolName string
	Desc     string
	Schema   json.RawMessage
	Cap      authz.Capability
	Run      func(ctx context.Context, callID string, args json.RawMessage, update func(string)) (Result, error)
}

// Name implements [Tool].
func (f *Func) Name() string { return f.ToolName }

// Description implements [Tool].
func (f *Func) Description() string { return f.Desc }

// InputSchema implements [Tool].
func (f *Func) InputSchema() json.RawMessage { return f.Schema }

// Capability implements [Tool].
func (f *Func) Capability() authz.Capability { return f.Cap }

// Execute implements [Tool] by calling Run.
func (f *Func) Execute(ctx context.Context, callID string, args json.RawMessage, update func(string)) (Result, error) {
	if f.Run == nil {
		return Result{}, errors.New("tool " + f.ToolName + " has no Run function")
	}
	return f.Run(ctx, callID, args, update)
}

// CallInfo is what a tool may know about the call it serves: the session
// and the speaker, whole, exactly as the gate checked it (its authority,
// source, permission rules, working directories and state directory: a
// file tool asks Speaker.WriteTarget whether it may write a path).
// runtime.Runtime.RunTool and the gate attach it to the context.
type CallInfo struct {
	SessionID string
	Speaker   authz.Speaker
}

// StoredAuthority is sp (authority and source) as the store records who
// wrote something: a memory source, a session allowance.
func StoredAuthority(sp authz.Speaker) sessions.SourceAuthority {
	a := sp.Authority()
	return sessions.SourceAuthority{
		SpeakerKind: a.SpeakerKind, SpeakerID: a.SpeakerID, SpeakerDisplay: a.SpeakerDisplay,
		PrincipalID: a.PrincipalID, Tier: string(a.Tier), Interaction: a.Interaction, Source: sp.Source(),
	}
}

type callKey struct{}

// WithCall returns a context carrying info.
func WithCall(ctx context.Context, info CallInfo) context.Context {
	return context.WithValue(ctx, callKey{}, info)
}

// CallFrom returns the CallInfo attached by [WithCall], if any.
func CallFrom(ctx context.Context) (CallInfo, bool) {
	info, ok := ctx.Value(callKey{}).(CallInfo)
	return info, ok
}
