package mcpserver

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/sessions"
)

// sessionsListLimit is how many sessions sessions_list returns at most.
const sessionsListLimit = 100

// sessionsList returns the most recently updated sessions of the install.
func (c *connection) sessionsList(ctx context.Context) (*mcp.CallToolResult, error) {
	list, err := c.s.store.ListSessions(ctx, sessionsListLimit)
	if err != nil {
		c.s.log.Warn("sessions_list: list sessions failed", "error", err)
		return errorPayload(contracts.TextSessionDataUnavailable, ""), nil
	}
	out := make([]contracts.SessionSummary, 0, len(list))
	for _, s := range list {
		out = append(out, contracts.SessionSummary{ID: s.ID, Title: s.Title, UpdatedAt: s.UpdatedAt.Unix()})
	}
	return payloadResult(out)
}

// sessionGet returns the active branch of a session, root first.
func (c *connection) sessionGet(ctx context.Context, id string) (*mcp.CallToolResult, error) {
	if _, err := c.s.store.GetSession(ctx, id); err != nil {
		if errors.Is(err, sessions.ErrNotFound) {
			return errorPayload(contracts.TextSessionNotFound, ""), nil
		}
		c.s.log.Warn("session_get: load session failed", "session_id", id, "error", err)
		return errorPayload(contracts.TextSessionDataUnavailable, ""), nil
	}
	branch, err := c.s.store.Branch(ctx, id)
	if err != nil {
		if errors.Is(err, sessions.ErrNotFound) {
			return errorPayload(contracts.TextSessionNotFound, ""), nil
		}
		c.s.log.Warn("session_get: load branch failed", "session_id", id, "error", err)
		return errorPayload(contracts.TextSessionDataUnavailable, ""), nil
	}
	out := make([]contracts.Message, 0, len(branch))
	for _, m := range branch {
		out = append(out, contracts.Message{ID: m.ID, Role: m.Role, Content: m.Content, Timestamp: m.CreatedAt.Unix()})
	}
	return payloadResult(out)
}
