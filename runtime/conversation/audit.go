package conversation

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/sessions"
)

// The audit records of a conversation, written here and nowhere else, one
// payload type per record type (the one list of every type is in
// sessions). Origin is always the speaker's id ("mcp/<client id>",
// "owner"). Payloads never hold prompt text, message content, tool
// arguments or the token. A request's records carry its OpenTelemetry
// trace id (trace_id, 32 hex digits) when its context has a valid span
// context, so an operator goes from a record to its trace and back; a
// record without one has no trace_id member, as every record written
// before the field existed.

// PromptRequestedPayload is the payload of [sessions.AuditPromptRequested],
// written for an MCP client's turn before anything of it happens.
// NewSession marks a session the request is about to create.
type PromptRequestedPayload struct {
	RequestID  any    `json:"request_id"` // the front end's request id: a string or a number
	SessionID  string `json:"session_id"`
	ClientID   string `json:"client_id"`
	NewSession bool   `json:"new_session,omitempty"`
	TaskID     string `json:"task_id,omitempty"`  // the durable task the turn runs, if any
	TraceID    string `json:"trace_id,omitempty"` // the request's OpenTelemetry trace, when it has one
}

// PromptCompletedPayload is the payload of [sessions.AuditPromptCompleted]:
// an MCP client's turn ran to its end.
type PromptCompletedPayload struct {
	RequestID any    `json:"request_id"`
	SessionID string `json:"session_id"`
	ClientID  string `json:"client_id"`
	Failed    bool   `json:"failed"`
	TaskID    string `json:"task_id,omitempty"`
	TraceID   string `json:"trace_id,omitempty"` // the request's OpenTelemetry trace, when it has one
}

// RequestCancelledPayload is the payload of
// [sessions.AuditRequestCancelled]: a cancel won an MCP client's turn's
// commit point. Reason is one of the Reason constants.
type RequestCancelledPayload struct {
	RequestID any    `json:"request_id"`
	SessionID string `json:"session_id"`
	ClientID  string `json:"client_id"`
	Reason    string `json:"reason"`
	TaskID    string `json:"task_id,omitempty"`
	TraceID   string `json:"trace_id,omitempty"` // the request's OpenTelemetry trace, when it has one
}

// ToolRequestedPayload is the payload of [sessions.AuditToolRequested]: the
// tool an MCP client called directly, never its arguments.
type ToolRequestedPayload struct {
	RequestID any    `json:"request_id"`
	Tool      string `json:"tool"`
	ClientID  string `json:"client_id"`
	TraceID   string `json:"trace_id,omitempty"` // the request's OpenTelemetry trace, when it has one
}

// ToolDeniedPayload is the payload of [sessions.AuditToolDenied]: a gate
// denial of an MCP client's call. InTurn marks a tool the model called
// inside a turn (the record then names the session); without it the
// denial was of a direct call.
type ToolDeniedPayload struct {
	Tool       string `json:"tool"`
	ReasonCode string `json:"reason_code"`
	Capability string `json:"capability"`
	ClientID   string `json:"client_id"`
	InTurn     bool   `json:"in_turn,omitempty"`
	TraceID    string `json:"trace_id,omitempty"` // the request's OpenTelemetry trace, when it has one
}

// OwnerSessionCreatedPayload is the payload of
// [sessions.AuditOwnerSessionCreated]: who made the session and through
// which command (the Line's Via).
type OwnerSessionCreatedPayload struct {
	SessionID   string `json:"session_id"`
	Source      string `json:"source"`
	SpeakerID   string `json:"speaker_id"`
	PrincipalID string `json:"principal_id"`
	Command     string `json:"command"`
}

// Decisions of an [OwnerApprovalPayload].
const (
	DecisionAllowOnce    = "allow_once"
	DecisionAllowSession = "allow_session"
	DecisionDeny         = "deny"
)

// OwnerApprovalPayload is the payload of [sessions.AuditOwnerApproval]:
// tool, decision and session, never arguments. Standing marks a call
// allowed by an earlier "allow for this session" without a new question.
type OwnerApprovalPayload struct {
	SessionID  string `json:"session_id"`
	Tool       string `json:"tool"`
	Capability string `json:"capability"`
	Decision   string `json:"decision"`
	Standing   bool   `json:"standing,omitempty"`
}

// Reasons of a [RequestCancelledPayload], and of [Line.Cancel].
const (
	// ReasonPromptCancel: the front end's own cancel call (prompt_cancel).
	ReasonPromptCancel = "prompt_cancel"
	// ReasonRequestCancelled: the request was withdrawn
	// (notifications/cancelled).
	ReasonRequestCancelled = "request_cancelled"
	// ReasonConnectionClosed: the front end went away.
	ReasonConnectionClosed = "connection_closed"
	// ReasonTaskCancel: a tasks/cancel stopped a durable task's turn.
	ReasonTaskCancel = "tasks_cancel"
	// ReasonRunnerStopped: a task's runner stopped before the turn's
	// commit point.
	ReasonRunnerStopped = "runner_stopped"
)

// AuditFailure is what a request does when its request record cannot be
// written (config audit.on_failure).
type AuditFailure int

const (
	// AuditRefuse, the default: the request is refused before any side
	// effect ([ErrAuditUnavailable]), so nothing runs that the audit log
	// does not show.
	AuditRefuse AuditFailure = iota
	// AuditLog: the failure is logged and the request runs unaudited.
	AuditLog
)

// records are the audit records a speaker's conversation writes, by
// source: the difference between two speakers is this data, not a second
// copy of the conversation. "" writes none.
type records struct {
	requested, completed, cancelled string // a turn's
	toolRequested, denied           string // a direct call's, a denial's
	sessionCreated                  string // a new session's
	idPrefix, untitled              string // a new session's id prefix and title without text
}

func recordsOf(sp authz.Speaker) records {
	if sp.Source() == authz.SourceCLI {
		return records{sessionCreated: sessions.AuditOwnerSessionCreated, idPrefix: "cli_", untitled: "Owner session"}
	}
	return records{
		requested: sessions.AuditPromptRequested, completed: sessions.AuditPromptCompleted, cancelled: sessions.AuditRequestCancelled,
		toolRequested: sessions.AuditToolRequested, denied: sessions.AuditToolDenied,
		idPrefix: "mcp_", untitled: "MCP session",
	}
}

// auditTimeout bounds one audit append.
const auditTimeout = 10 * time.Second

// appendAudit appends a record with the speaker's id as origin. It runs
// detached from any request context: records of cancellations are written
// after the request's context ended.
func (s *Service) appendAudit(ctx context.Context, origin, typ, sessionID string, payload any) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	ctx, span := tracer.Start(ctx, "audit append", trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attribute.String("openprogram.audit.type", typ)))
	start := time.Now()
	_, err := sessions.AppendAuditPayload(ctx, s.store, typ, origin, sessionID, payload)
	errType := ""
	if err != nil {
		errType = semconv.ErrorTypeOther.Value.AsString()
		span.SetStatus(codes.Error, errType)
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
	}
	span.End()
	if auditAppendDuration.Enabled(ctx) {
		attrs := []attribute.KeyValue{attribute.String("openprogram.audit.type", typ)}
		if errType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		}
		auditAppendDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
	return err
}

// tracer and auditAppendDuration are the conversation's telemetry (the
// runtime's instrumentation scope): a span per audit append, and its
// duration by record type (a fixed set) and outcome.
var (
	tracer              = otel.Tracer(runtime.Instrumentation)
	auditAppendDuration = func() metric.Float64Histogram {
		h, err := otel.Meter(runtime.Instrumentation).Float64Histogram("openprogram.audit.append.duration",
			metric.WithDescription("Time to append one audit record (the chain's lock, the signature and the store's write)."), metric.WithUnit("s"))
		if err != nil { // h is a no-op instrument then
			otel.Handle(fmt.Errorf("conversation: make the audit append histogram: %w", err))
		}
		return h
	}()
)

// traceIDOf is the trace id of ctx's span, "" when it has none.
func traceIDOf(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// Record appends the record of something of the line's that already
// happened (a start, a denial, a completed turn, a task's end); a store
// failure is logged, as there is nothing left to refuse. typ "" writes
// nothing.
func (l *Line) Record(ctx context.Context, typ, sessionID string, payload any) {
	if typ == "" {
		return
	}
	if err := l.svc.appendAudit(ctx, l.sp.ID(), typ, sessionID, payload); err != nil {
		l.svc.log.Warn("append audit record failed", "type", typ, "error", err)
	}
}

// admit writes the record of a request before anything of it runs and
// reports whether the request may go on: its record is written, or the
// append failed under [AuditLog]. typ "" admits without a record.
func (l *Line) admit(ctx context.Context, typ, sessionID string, payload any) error {
	if typ == "" {
		return nil
	}
	err := l.svc.appendAudit(ctx, l.sp.ID(), typ, sessionID, payload)
	if err == nil {
		return nil
	}
	if l.svc.onAuditFailure == AuditLog {
		l.svc.log.Warn("append audit record failed; running the request unaudited (audit.on_failure = log)", "type", typ, "error", err)
		return nil
	}
	l.svc.log.Error("append audit record failed; request refused (audit.on_failure = refuse)", "type", typ, "error", err)
	return ErrAuditUnavailable
}
