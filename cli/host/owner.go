package host

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// The owner's room: standing approvals ("allow for this session"), kept
// per session in the store, and the decision whether one answers a call.
// Only the owner's speaker (source cli, owner tier) holds them: an MCP
// client's calls never read or write them.

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

// ErrNotOwner: a speaker other than the owner's tried to record a standing
// approval.
var ErrNotOwner = errors.New("host: only the owner's speaker holds standing approvals")

// auditTimeout bounds the audit record of a standing approval.
const auditTimeout = 10 * time.Second

// isOwner reports whether req is the owner's speaker: source cli and a
// valid owner authority. Everything else (an MCP client first of all) has
// no standing approvals.
func isOwner(req authz.Request) bool {
	a := req.Authority
	return req.Source == authz.SourceCLI && a.SpeakerKind == authz.SpeakerKindOwner && a.Tier == authz.TierOwner && a.Validate() == nil
}

// AllowForSession records the owner's "allow for this session" of toolName in
// session sessionID, in the store: it survives a restart of `chat` and
// answers `prompt --session` too. Any speaker but the owner's gets
// [ErrNotOwner] and nothing is written.
func (h *Host) AllowForSession(ctx context.Context, sp Speaker, sessionID, toolName string) error {
	if !isOwner(sp.Request) {
		return ErrNotOwner
	}
	return h.store.AllowForSession(ctx, sessionID, toolName, tool.StoredAuthority(sp.Request))
}

// standing is the one answer to "does a standing approval answer this
// call" (the gate's StandingFunc for every speaker): only for the owner's
// speaker, only for a tool the owner allowed for this session, and only
// once its audit record (allow_session, standing) is written. It then
// tells consoles why the call ran (events.StandingApproval).
func (h *Host) standing(ctx context.Context, req authz.Request, sessionID string, call questions.Approval) bool {
	if !isOwner(req) {
		return false // never read for an MCP client
	}
	tools, err := h.store.SessionAllowances(ctx, sessionID)
	if err != nil {
		h.log.Warn("read the standing approvals; asking instead", "session", sessionID, "error", err)
		return false
	}
	if !slices.Contains(tools, call.Tool) {
		return false
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if _, err := sessions.AppendAuditPayload(actx, h.store, sessions.AuditOwnerApproval, req.Authority.SpeakerID, sessionID, OwnerApprovalPayload{
		SessionID: sessionID, Tool: call.Tool, Capability: call.Capability, Decision: DecisionAllowSession, Standing: true,
	}); err != nil {
		h.log.Warn("append the audit record of a standing approval; not applying it", "session", sessionID, "error", err)
		return false
	}
	h.bus.Publish(events.Event{Type: events.StandingApproval, SessionID: sessionID, Data: events.StandingData{
		CallID: clip.String(call.CallID, events.MaxCallIDLen), Tool: clip.String(call.Tool, events.MaxToolLen),
	}})
	return true
}
