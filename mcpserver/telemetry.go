package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/mcpserver/internal/stdio"
)

// instrumentation is the OpenTelemetry instrumentation scope of the MCP
// server's spans and metrics. They go to the global providers, which the
// host sets when telemetry is configured; otherwise they are no-ops.
const instrumentation = "github.com/openprogram/openprogram/mcpserver"

// propagator reads a client's trace context from params._meta
// (traceparent, tracestate: W3C Trace Context, SEP-414).
var propagator = propagation.TraceContext{}

// serverMetrics are the MCP server's instruments. The global meter
// delegates to the provider the host sets later, so they are made once.
var serverMetrics = func() (sm struct {
	op    mcpconv.ServerOperationDuration
	sess  mcpconv.ServerSessionDuration
	tasks metric.Int64Counter
}) {
	m := otel.Meter(instrumentation)
	var errs [3]error
	sm.op, errs[0] = mcpconv.NewServerOperationDuration(m)
	sm.sess, errs[1] = mcpconv.NewServerSessionDuration(m)
	sm.tasks, errs[2] = m.Int64Counter("openprogram.tasks",
		metric.WithDescription("Durable tasks that reached a state: working when created, then their terminal state."), metric.WithUnit("{task}"))
	// An instrument that cannot be made is a no-op one; the error goes to
	// OpenTelemetry's error handler (stderr by default), not away.
	if err := errors.Join(errs[:]...); err != nil {
		otel.Handle(fmt.Errorf("mcpserver: make the MCP server's metric instruments: %w", err))
	}
	return sm
}()

// countTask counts a task that reached state (openprogram.tasks).
func countTask(ctx context.Context, state string) {
	serverMetrics.tasks.Add(ctx, 1, metric.WithAttributes(attribute.String("state", state)))
}

// traceContextOf is ctx's trace context as W3C traceparent and
// tracestate ("" when it has none), for a task's runner to continue.
func traceContextOf(ctx context.Context) (traceparent, tracestate string) {
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// startTaskSpan starts the span of a task's run in its runner, its parent
// the creating request's span (traceparent, tracestate from the task's
// row), so the runner's turn joins that trace.
func startTaskSpan(ctx context.Context, traceparent, tracestate string) (context.Context, trace.Span) {
	if traceparent != "" {
		ctx = propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent, "tracestate": tracestate})
	}
	return otel.Tracer(instrumentation).Start(ctx, "run_task "+contracts.PromptSend, trace.WithSpanKind(trace.SpanKindConsumer))
}

// metaCarrier is the trace context members of a request's params._meta.
// Only string values are taken; anything else is ignored.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}
func (m metaCarrier) Set(string, string) {}
func (m metaCarrier) Keys() []string     { return []string{"traceparent", "tracestate"} }

// startRequestSpan starts the server span of one MCP request, named
// "{mcp.method.name} {target}" as the MCP semantic conventions say, its
// parent the client's trace context in params._meta when there is one.
func (c *connection) startRequestSpan(ctx context.Context, method string, req mcp.Request) (context.Context, trace.Span) {
	// A request without params holds a typed nil.
	if p := req.GetParams(); p != nil && !isNilPointer(p) {
		if meta := p.GetMeta(); len(meta) > 0 {
			ctx = propagator.Extract(ctx, metaCarrier(meta))
		}
	}
	tool := requestTool(method, req)
	name := method
	if tool != "" {
		name += " " + tool
	}
	ctx, span := otel.Tracer(instrumentation).Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer))
	if !span.IsRecording() {
		return ctx, span
	}
	attrs := []attribute.KeyValue{
		semconv.McpMethodNameKey.String(method),
		semconv.NetworkTransportPipe,
	}
	if r := stdio.RequestOf(req); r != nil {
		if id := requestIDText(r.ID()); id != "" {
			attrs = append(attrs, semconv.JSONRPCRequestID(id))
		}
	}
	if v := protocolVersion(req); v != "" {
		attrs = append(attrs, semconv.McpProtocolVersionKey.String(v))
	}
	if tool != "" {
		attrs = append(attrs, semconv.GenAIToolName(tool), semconv.GenAIOperationNameExecuteTool)
	}
	span.SetAttributes(attrs...)
	return ctx, span
}

// endRequestSpan ends span with the request's outcome: error.type is the
// JSON-RPC error code of an error answer, "tool_error" for a result with
// isError. It records mcp.server.operation.duration (method, tool,
// error.type and protocol version: bounded values only).
func (c *connection) endRequestSpan(ctx context.Context, span trace.Span, start time.Time, method string, req mcp.Request, res mcp.Result, err error) {
	var errType string
	var werr *jsonrpc.Error
	switch {
	case errors.As(err, &werr):
		errType = strconv.FormatInt(werr.Code, 10)
	case err != nil:
		errType = semconv.ErrorTypeOther.Value.AsString()
	default:
		if r, ok := res.(*mcp.CallToolResult); ok && r.IsError {
			errType = "tool_error"
		}
	}
	if span.IsRecording() {
		if errType != "" {
			span.SetAttributes(semconv.ErrorTypeKey.String(errType))
			span.SetStatus(codes.Error, errType)
		}
		if werr != nil {
			span.SetAttributes(semconv.RPCResponseStatusCode(strconv.FormatInt(werr.Code, 10)))
		}
	}
	span.End()
	op := serverMetrics.op
	if !op.Enabled(ctx) {
		return
	}
	attrs := []attribute.KeyValue{semconv.NetworkTransportPipe}
	if tool := requestTool(method, req); tool != "" {
		attrs = append(attrs, op.AttrGenAIToolName(tool))
	}
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
	}
	if v := protocolVersion(req); v != "" {
		attrs = append(attrs, op.AttrProtocolVersion(v))
	}
	op.Record(ctx, time.Since(start).Seconds(), mcpconv.MethodNameAttr(boundedMethod(method)), attrs...)
}

// recordSession records mcp.server.session.duration for a connection that
// lasted since start.
func (c *connection) recordSession(start time.Time, errType string) {
	sess := serverMetrics.sess
	ctx := context.Background()
	if !sess.Enabled(ctx) {
		return
	}
	attrs := []attribute.KeyValue{semconv.NetworkTransportPipe}
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
	}
	sess.Record(ctx, time.Since(start).Seconds(), attrs...)
}

// requestTool is the tool a tools/call names, when it is one of the
// contract's six (a metric attribute must stay bounded; an unknown name is
// answered with -32602 anyway).
func requestTool(method string, req mcp.Request) string {
	if method != "tools/call" {
		return ""
	}
	call, ok := req.(*mcp.CallToolRequest)
	if !ok || call.Params == nil || !slices.Contains(contracts.Names(), call.Params.Name) {
		return ""
	}
	return call.Params.Name
}

// boundedMethod is method when the server serves it, "_OTHER" otherwise
// (a metric attribute must not take whatever a client sends).
func boundedMethod(method string) string {
	if slices.Contains(servedMethods, method) {
		return method
	}
	return "_OTHER"
}

// protocolVersion is the protocol version the connection negotiated, or
// "" before initialize.
func protocolVersion(req mcp.Request) string {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return ""
	}
	if ip := ss.InitializeParams(); ip != nil && slices.Contains(contracts.SupportedProtocolVersions(), ip.ProtocolVersion) {
		return ip.ProtocolVersion
	}
	return ""
}

// requestIDText is a JSON-RPC id as the jsonrpc.request.id attribute
// wants it: its string form, clipped.
func requestIDText(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case string:
		return clip.String(v, 128)
	case int64:
		return strconv.FormatInt(v, 10)
	}
	return ""
}

// isNilPointer reports whether v is a nil pointer (go-sdk's params of a
// request without params).
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}
