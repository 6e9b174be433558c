package mcpserver

import (
	"context"
	"time"

	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/sessions"
)

// All MCP audit is written here, one payload type per record type, each
// written from one place. Origin is always the client's speaker id
// ("mcp/<client id>").

// ServerStartPayload is the payload of [AuditServerStart].
type ServerStartPayload struct {
	ClientID string `json:"client_id"`
	Version  string `json:"version"`
}

// ServerStopPayload is the payload of [AuditServerStop]; Reason is "eof",
// "cancelled" or "error".
type ServerStopPayload struct {
	ClientID string `json:"client_id"`
	Reason   string `json:"reason"`
}

// ToolDeniedPayload is the payload of [AuditToolDenied]. InTurn marks a
// denial of a tool the model called inside a prompt_send turn (the record
// then names the session); without it the denial was of a tool_call.
type ToolDeniedPayload struct {
	Tool       string `json:"tool"`
	ReasonCode string `json:"reason_code"`
	Capability string `json:"capability"`
	ClientID   string `json:"client_id"`
	InTurn     bool   `json:"in_turn,omitempty"`
}

// PromptCompletedPayload is the payload of [AuditPromptCompleted].
type PromptCompletedPayload struct {
	RequestID any    `json:"request_id"` // the JSON-RPC id: a string or a number
	SessionID string `json:"session_id"`
	ClientID  string `json:"client_id"`
	Failed    bool   `json:"failed"`
	TaskID    string `json:"task_id,omitempty"` // the task the turn runs, if any
}

// RequestCancelledPayload is the payload of [AuditRequestCancelled];
// Reason is ReasonPromptCancel, ReasonRequestCancelled or
// ReasonConnectionClosed.
type RequestCancelledPayload struct {
	RequestID any    `json:"request_id"`
	SessionID string `json:"session_id"`
	ClientID  string `json:"client_id"`
	Reason    string `json:"reason"`
	TaskID    string `json:"task_id,omitempty"` // the task the turn runs, if any
}

// PromptRequestedPayload is the payload of [AuditPromptRequested].
// NewSession marks a session the request is about to create.
type PromptRequestedPayload struct {
	RequestID  any    `json:"request_id"`
	SessionID  string `json:"session_id"`
	ClientID   string `json:"client_id"`
	NewSession bool   `json:"new_session,omitempty"`
	TaskID     string `json:"task_id,omitempty"` // the task the turn runs, if any
}

// ToolRequestedPayload is the payload of [AuditToolRequested]: the tool
// named, never its arguments.
type ToolRequestedPayload struct {
	RequestID any    `json:"request_id"`
	Tool      string `json:"tool"`
	ClientID  string `json:"client_id"`
}

// TaskCreatedPayload is the payload of [AuditTaskCreated]: the task, the
// request that created it and the ttl it was given, in milliseconds.
type TaskCreatedPayload struct {
	TaskID    string `json:"task_id"`
	RequestID any    `json:"request_id"`
	ClientID  string `json:"client_id"`
	TTLMs     int64  `json:"ttl_ms"`
}

// TaskCancelledPayload is the payload of [AuditTaskCancelled].
type TaskCancelledPayload struct {
	TaskID    string `json:"task_id"`
	RequestID any    `json:"request_id"` // the tasks/cancel request's id
	ClientID  string `json:"client_id"`
}

// TaskFinishedPayload is the payload of [AuditTaskFinished]; Status is the
// task's terminal status.
type TaskFinishedPayload struct {
	TaskID   string `json:"task_id"`
	ClientID string `json:"client_id"`
	Status   string `json:"status"`
}

// AuditFailure is what a prompt_send or tool_call does when its request
// record cannot be written (config audit.on_failure).
type AuditFailure int

const (
	// AuditRefuse, the default: the request is refused before any side
	// effect, so nothing runs that the audit log does not show.
	AuditRefuse AuditFailure = iota
	// AuditLog: the failure is logged and the request runs unaudited.
	AuditLog
)

// reasonAuditUnavailable is the prompt_send reason of a request refused
// because its audit record could not be written.
const reasonAuditUnavailable = "audit_unavailable"

// auditRequest writes the record of a request before anything of it runs,
// and reports whether the request may go on: its record is written, or
// the append failed under [AuditLog].
func (s *Server) auditRequest(typ, sessionID string, payload any) bool {
	err := s.appendAudit(typ, sessionID, payload)
	if err == nil {
		return true
	}
	if s.onAuditFailure == AuditLog {
		s.log.Warn("append audit record failed; running the request unaudited (audit.on_failure = log)", "type", typ, "error", err)
		return true
	}
	s.log.Error("append audit record failed; request refused (audit.on_failure = refuse)", "type", typ, "error", err)
	return false
}

// auditDenial records one gate denial, of a tool_call (sessionID "") or
// inside a turn.
func (s *Server) auditDenial(sessionID string, d events.ToolEndData) {
	s.audit(AuditToolDenied, sessionID, ToolDeniedPayload{
		Tool: d.Tool, ReasonCode: d.ReasonCode, Capability: d.Capability, ClientID: s.clientID, InTurn: d.RequestID != "",
	})
}

// audit appends the record of something that already happened (a start,
// a denial, a completed or cancelled turn); a store failure is logged, as
// there is nothing left to refuse.
func (s *Server) audit(typ, sessionID string, payload any) {
	if err := s.appendAudit(typ, sessionID, payload); err != nil {
		s.log.Warn("append audit record failed", "type", typ, "error", err)
	}
}

// appendAudit appends an audit record. It runs detached from any request
// context: records of cancellations are written after the request's
// context ended.
func (s *Server) appendAudit(typ, sessionID string, payload any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := sessions.AppendAuditPayload(ctx, s.store, typ, s.authority.SpeakerID, sessionID, payload)
	return err
}
