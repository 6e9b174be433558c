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
}

// RequestCancelledPayload is the payload of [AuditRequestCancelled];
// Reason is ReasonPromptCancel, ReasonRequestCancelled or
// ReasonConnectionClosed.
type RequestCancelledPayload struct {
	RequestID any    `json:"request_id"`
	SessionID string `json:"session_id"`
	ClientID  string `json:"client_id"`
	Reason    string `json:"reason"`
}

// auditDenial records one gate denial, of a tool_call (sessionID "") or
// inside a turn.
func (s *Server) auditDenial(sessionID string, d events.ToolEndData) {
	s.audit(AuditToolDenied, sessionID, ToolDeniedPayload{
		Tool: d.Tool, ReasonCode: d.ReasonCode, Capability: d.Capability, ClientID: s.clientID, InTurn: d.RequestID != "",
	})
}

// audit appends an audit record. It must not fail a request, so a store
// failure is logged. It runs detached from any request context: records of
// cancellations are written after the request's context ended.
func (s *Server) audit(typ, sessionID string, payload any) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := sessions.AppendAuditPayload(ctx, s.store, typ, s.authority.SpeakerID, sessionID, payload); err != nil {
		s.log.Warn("append audit record failed", "type", typ, "error", err)
	}
}
