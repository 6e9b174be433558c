package mcpserver

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/openprogram/openprogram/internal/clip"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/internal/stdio"
	"github.com/openprogram/openprogram/sessions"
)

// sessionsListLimit is how many sessions sessions_list returns at most.
const sessionsListLimit = 100

// sessionGetReserve is what a session_get reserves of the connection's
// in-flight budget before it reads the branch: a bound of its response
// frame, the payload text escaped once more as a JSON string (a payload
// byte takes at most two there: it holds no control characters) plus the
// frame around it. It exceeds half the default budget, so on one
// connection one session_get reads and answers at a time.
const sessionGetReserve = 2*contracts.MaxSessionPayloadBytes + 1<<10

// sessionsList returns the most recently updated sessions of the install.
func (c *connection) sessionsList(ctx context.Context) (*mcp.CallToolResult, error) {
	list, err := c.s.store.ListSessions(ctx, sessionsListLimit)
	if err != nil {
		c.s.log.Warn("sessions_list: list sessions failed", "error", err)
		return errorPayload(contracts.TextSessionDataUnavailable, ""), nil
	}
	out := make([]contracts.SessionSummary, 0, len(list))
	for _, s := range list {
		out = append(out, contracts.SessionSummary{ID: s.ID, Title: clip.String(s.Title, contracts.MaxTitleBytes), UpdatedAt: s.UpdatedAt.Unix()})
	}
	return payloadResult(out)
}

// sessionGet returns the active branch of a session, root first, bounded
// (see boundedBranch). Before it reads anything it reserves the bound of its
// response against the connection's budget.
func (c *connection) sessionGet(ctx context.Context, req *mcp.CallToolRequest, id string) (*mcp.CallToolResult, error) {
	if r := stdio.RequestOf(req); r != nil {
		if err := r.Reserve(ctx, sessionGetReserve); err != nil {
			return nil, err
		}
	}
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
	text, err := boundedBranch(branch)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

// boundedBranch returns the session_get payload text of branch (root
// first): each content cut to contracts.MaxMessageContentBytes as tool
// output is (clip.Middle), and the whole within
// contracts.MaxSessionPayloadBytes by keeping the newest messages that fit;
// when older ones are left out, the first kept content starts with
// contracts.OmittedMessagesMarker. The text is what contracts.TextResult
// writes for the kept messages.
func boundedBranch(branch []sessions.Message) (string, error) {
	item := func(m *sessions.Message, prefix string) (string, error) {
		content, _ := clip.Middle(m.Content, contracts.MaxMessageContentBytes)
		return contracts.EncodePayload(contracts.Message{ID: m.ID, Role: m.Role, Content: prefix + content, Timestamp: m.CreatedAt.Unix()})
	}
	// Room for "[", "]" and the marker: a message never takes more than a
	// sixth of the budget (content escapes at most sixfold), so the newest
	// one always fits.
	budget := contracts.MaxSessionPayloadBytes - 2 - 2*len(contracts.OmittedMessagesMarker(len(branch)))
	var items []string // newest first
	for i := len(branch) - 1; i >= 0; i-- {
		enc, err := item(&branch[i], "")
		if err != nil {
			return "", err
		}
		if len(enc)+1 > budget {
			break
		}
		budget -= len(enc) + 1
		items = append(items, enc)
	}
	if omitted := len(branch) - len(items); omitted > 0 && len(items) > 0 {
		enc, err := item(&branch[omitted], contracts.OmittedMessagesMarker(omitted))
		if err != nil {
			return "", err
		}
		items[len(items)-1] = enc
	}
	slices.Reverse(items)
	return "[" + strings.Join(items, ",") + "]", nil
}
