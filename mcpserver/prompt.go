package mcpserver

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/internal/stdio"
	"github.com/openprogram/openprogram/runtime/conversation"
)

// Machine-readable reasons of a prompt_send {"error":"prompt execution
// failed"} result.
const (
	reasonSessionBusy        = "session_busy"
	reasonDuplicateRequest   = "duplicate_request"
	reasonServiceClosed      = "service_closed"
	reasonSessionUnavailable = "session_unavailable"
	reasonAuditUnavailable   = "audit_unavailable"
)

// promptSend runs one turn, in a new session or an existing one, through
// the client's line: the request record first (a refused append means
// nothing ran), then the turn, cancelled when the request ends.
func (c *connection) promptSend(ctx context.Context, req *mcp.CallToolRequest, a contracts.PromptSendArgs) (*mcp.CallToolResult, error) {
	r := stdio.RequestOf(req)
	if r == nil {
		return nil, errors.New("prompt_send: the request did not come through the stdio connection")
	}
	turn := c.line.NewTurn(r.ID().Raw(), a.SessionID, a.Prompt)
	if err := c.line.Admit(ctx, turn); err != nil {
		return errorPayload(contracts.TextPromptExecutionFailed, reasonAuditUnavailable), nil
	}
	prog := newProgress(ctx, req)
	fwd := startTurnProgress(prog)
	reply, err := c.line.Send(ctx, turn, conversation.SendOptions{
		Observe: fwd.observe, OnCancel: prog.close, Answered: r.Answered(),
		EndReason: func() string {
			if r.CancelledByPeer() {
				return conversation.ReasonRequestCancelled
			}
			return conversation.ReasonConnectionClosed
		},
	})
	fwd.finish(errors.Is(err, conversation.ErrCancelled))
	return promptAnswer(reply, err)
}

// promptAnswer is what a prompt_send answers for its turn's outcome: the
// one mapping, for a plain request and for a task's result alike.
func promptAnswer(reply conversation.Reply, err error) (*mcp.CallToolResult, error) {
	switch {
	case err == nil:
		return payloadResult(contracts.PromptSendResult{
			SessionID: reply.SessionID, Text: reply.Text, AssistantMsgID: reply.AssistantMessageID, Failed: reply.Failed,
		})
	case errors.Is(err, conversation.ErrCancelled):
		// Nothing of the turn's result was written, and nothing of the
		// turn reaches the client any more.
		return nil, errRequestCancelled
	case errors.Is(err, conversation.ErrSessionNotFound):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: contracts.TextInvalidPromptSession}
	case errors.Is(err, conversation.ErrSessionUnavailable):
		return errorPayload(contracts.TextPromptExecutionFailed, reasonSessionUnavailable), nil
	case errors.Is(err, conversation.ErrSessionBusy):
		return errorPayload(contracts.TextPromptExecutionFailed, reasonSessionBusy), nil
	case errors.Is(err, conversation.ErrDuplicateRequest):
		return errorPayload(contracts.TextPromptExecutionFailed, reasonDuplicateRequest), nil
	case errors.Is(err, conversation.ErrClosed):
		return errorPayload(contracts.TextPromptExecutionFailed, reasonServiceClosed), nil
	case errors.Is(err, conversation.ErrAuditUnavailable):
		return errorPayload(contracts.TextPromptExecutionFailed, reasonAuditUnavailable), nil
	}
	return errorPayload(contracts.TextPromptExecutionFailed, ""), nil
}

// promptCancel cancels the turn prompt_send started for sessionID on this
// connection, if it still runs, and waits (bounded) until that prompt_send
// has been answered.
func (c *connection) promptCancel(ctx context.Context, sessionID string) (*mcp.CallToolResult, error) {
	cancelled, answered := c.line.CancelSession(sessionID, conversation.ReasonPromptCancel)
	if cancelled {
		t := time.NewTimer(c.s.cancelWait)
		select {
		case <-answered:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return payloadResult(contracts.PromptCancelResult{SessionID: sessionID, Cancelled: cancelled})
}
