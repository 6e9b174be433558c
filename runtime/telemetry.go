package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/tool"
)

// Instrumentation is the OpenTelemetry instrumentation scope of the
// runtime's spans and metrics (the turn, each model call, each tool run,
// the lease wait and the store writes). They go to the global providers,
// which the host sets when telemetry is configured; otherwise every call
// is a no-op. Spans and metrics never carry prompt text, arguments,
// results or file contents.
const Instrumentation = "github.com/openprogram/openprogram/runtime"

// AgentName is gen_ai.agent.name of a turn's span.
const AgentName = "openprogram"

var tracer = otel.Tracer(Instrumentation)

// runtimeMetrics are the runtime's instruments, made once: the global
// meter delegates to the provider the host sets later. Their attributes
// are bounded: provider, model, token type, error class, tool name (a
// registered tool's, else "_OTHER") and reason code; never an id.
var runtimeMetrics = func() (m struct {
	opDuration genaiconv.ClientOperationDuration
	tokens     genaiconv.ClientTokenUsage
	denials    metric.Int64Counter
}) {
	meter := otel.Meter(Instrumentation)
	var errs [3]error
	m.opDuration, errs[0] = genaiconv.NewClientOperationDuration(meter)
	m.tokens, errs[1] = genaiconv.NewClientTokenUsage(meter)
	m.denials, errs[2] = meter.Int64Counter("openprogram.tool.denials",
		metric.WithDescription("Tool calls the gate denied, by reason code."), metric.WithUnit("{call}"))
	// An instrument that cannot be made is a no-op one; the error goes to
	// OpenTelemetry's error handler (stderr by default), not away.
	if err := errors.Join(errs[:]...); err != nil {
		otel.Handle(fmt.Errorf("runtime: make the runtime's metric instruments: %w", err))
	}
	return m
}()

// startTurnSpan starts the span of one turn (invoke_agent), under the
// request's span when ctx carries one.
func (r *Runtime) startTurnSpan(ctx context.Context, req TurnRequest) (context.Context, trace.Span) {
	ctx, span := tracer.Start(ctx, "invoke_agent "+AgentName, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(AgentName),
			semconv.GenAIConversationID(req.SessionID))
		if c := r.opts.CaptureContent; c != nil {
			span.SetAttributes(semconv.GenAIInputMessagesKey.String(messagesJSON("user", captured(c, req.Text))))
		}
	}
	return ctx, span
}

// captureLimit bounds each captured text, after masking.
const captureLimit = 4 << 10

// captured is text masked by capture, then clipped to captureLimit: a
// clip before the mask could cut a secret in two, and the mask would then
// miss its first part.
func captured(capture func(string) string, text string) string {
	return clip.String(capture(text), captureLimit)
}

// messagesJSON is one message as gen_ai.input.messages and
// gen_ai.output.messages hold it.
func messagesJSON(role, text string) string {
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	type message struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	b, _ := json.Marshal([]message{{Role: role, Parts: []part{{Type: "text", Content: text}}}})
	return string(b)
}

// captureReply puts a turn's reply on its span, when content is captured.
func (r *Runtime) captureReply(span trace.Span, text string) {
	if c := r.opts.CaptureContent; c != nil && span.IsRecording() {
		span.SetAttributes(semconv.GenAIOutputMessagesKey.String(messagesJSON("assistant", captured(c, text))))
	}
}

// captureTool puts a tool's arguments and result on its span, when
// content is captured.
func (r *Runtime) captureTool(span trace.Span, args []byte, res tool.Result) {
	if c := r.opts.CaptureContent; c != nil && span.IsRecording() {
		span.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(capturedArguments(c, args)),
			semconv.GenAIToolCallResultKey.String(captured(c, resultText(res))))
	}
}

// capturedArguments is a tool call's arguments as [captured] gives them,
// re-encoded first without escapes where JSON allows it: a secret the
// model wrote with \u escapes is then masked like any other. Arguments
// that are not JSON are masked as they are.
func capturedArguments(capture func(string) string, args []byte) string {
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return captured(capture, string(args))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return captured(capture, string(args))
	}
	return captured(capture, strings.TrimSuffix(b.String(), "\n"))
}

// endSpan ends span, marking it failed with errType when not "".
func endSpan(span trace.Span, errType string) {
	if errType != "" && span.IsRecording() {
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	span.End()
}

// startSpan starts an internal span named name (the lease wait, a store
// write).
func startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
}

// chatCall is the span and the measurements of one model call.
type chatCall struct {
	ctx      context.Context
	span     trace.Span
	start    time.Time
	provider string
	model    string
}

// startChat starts the span of one model call, "chat {model}" (the
// GenAI conventions' name; "chat" alone when no model is configured).
func (r *Runtime) startChat(ctx context.Context, p provider.Provider) (context.Context, *chatCall) {
	name := "chat"
	if r.opts.Model != "" {
		name += " " + r.opts.Model
	}
	c := &chatCall{start: time.Now(), provider: p.Name(), model: r.opts.Model}
	c.ctx, c.span = tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient))
	if c.span.IsRecording() {
		attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(c.provider)}
		if c.model != "" {
			attrs = append(attrs, semconv.GenAIRequestModel(c.model))
		}
		c.span.SetAttributes(attrs...)
	}
	return c.ctx, c
}

// end ends the model call with resp or err, and records
// gen_ai.client.operation.duration and gen_ai.client.token.usage.
func (c *chatCall) end(resp provider.Response, err error) {
	errType := ""
	if err != nil {
		errType = string(provider.ClassOf(err))
	}
	if c.span.IsRecording() {
		if err == nil {
			attrs := []attribute.KeyValue{semconv.GenAIResponseFinishReasons(finishReason(resp))}
			if resp.Usage != nil {
				attrs = append(attrs, semconv.GenAIUsageInputTokens(resp.Usage.InputTokens), semconv.GenAIUsageOutputTokens(resp.Usage.OutputTokens))
			}
			c.span.SetAttributes(attrs...)
		}
	}
	endSpan(c.span, errType)
	m := runtimeMetrics
	if !m.opDuration.Enabled(c.ctx) {
		return
	}
	var attrs []attribute.KeyValue
	if c.model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(c.model))
	}
	durAttrs := attrs
	if errType != "" {
		durAttrs = append(attrs[:len(attrs):len(attrs)], semconv.ErrorTypeKey.String(errType))
	}
	op, prov := genaiconv.OperationNameChat, genaiconv.ProviderNameAttr(c.provider)
	m.opDuration.Record(c.ctx, time.Since(c.start).Seconds(), op, prov, durAttrs...)
	if resp.Usage != nil && err == nil {
		m.tokens.Record(c.ctx, int64(resp.Usage.InputTokens), op, prov, genaiconv.TokenTypeInput, attrs...)
		m.tokens.Record(c.ctx, int64(resp.Usage.OutputTokens), op, prov, genaiconv.TokenTypeOutput, attrs...)
	}
}

// finishReason is a reply's stop reason as gen_ai.response.finish_reasons
// names it.
func finishReason(resp provider.Response) string {
	switch {
	case len(resp.ToolCalls) > 0 || resp.StopReason == provider.StopToolUse:
		return "tool_calls"
	case resp.StopReason == provider.StopMaxTokens:
		return "length"
	}
	return "stop"
}

// startToolSpan starts the span of one tool run, "execute_tool {name}"
// (name: a registered tool's, else "_OTHER").
func startToolSpan(ctx context.Context, name, callID string) (context.Context, trace.Span) {
	ctx, span := tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name), semconv.GenAIToolCallID(callID))
	}
	return ctx, span
}

// endToolSpan ends a tool run's span with its result: the gate's decision
// as an event (decision and reason code), error.type "denied",
// "invalid_arguments" or "tool_error". A denial is counted in
// openprogram.tool.denials by reason code and tool (registered only).
func endToolSpan(ctx context.Context, span trace.Span, res tool.Result, registered bool, name string) {
	d, denied := res.Denial()
	errType := ""
	switch {
	case denied:
		errType = "denied"
	case res.ArgumentsRejected():
		errType = "invalid_arguments"
	case res.IsError:
		errType = "tool_error"
	}
	if span.IsRecording() {
		if denied {
			span.AddEvent("gate.decision", trace.WithAttributes(attribute.String("decision", "deny"),
				attribute.String("reason", d.ReasonCode), attribute.String("capability", string(d.Capability))))
		} else if registered && !res.ArgumentsRejected() {
			span.AddEvent("gate.decision", trace.WithAttributes(attribute.String("decision", "allow")))
		}
	}
	endSpan(span, errType)
	if denied {
		if !registered {
			name = "_OTHER"
		}
		runtimeMetrics.denials.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", d.ReasonCode), semconv.GenAIToolName(name)))
	}
}

// errClass is a failed step's error.type: "cancelled" for a context's
// end, "_OTHER" for any other error, "" for none.
func errClass(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}
