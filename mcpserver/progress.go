package mcpserver

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progress sends the notifications/progress of one request: only when the
// request carries _meta.progressToken, numbered 1, 2, 3, ... in the order
// of send calls, each written before send returns (so before the
// response). A nil *progress sends nothing.
type progress struct {
	ctx    context.Context
	notify func(context.Context, *mcp.ProgressNotificationParams) error
	token  any

	mu     sync.Mutex
	n      float64
	closed bool
}

// newProgress returns the progress sender of req, or nil when req has no
// progress token.
func newProgress(ctx context.Context, req *mcp.CallToolRequest) *progress {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return &progress{ctx: ctx, notify: req.Session.NotifyProgress, token: token}
}

// send writes one notification with message msg.
func (p *progress) send(msg string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.ctx.Err() != nil {
		return
	}
	p.n++
	// A failed write means the request or the connection is gone; the
	// response path reports that.
	_ = p.notify(p.ctx, &mcp.ProgressNotificationParams{
		ProgressToken: p.token,
		Progress:      p.n,
		Message:       msg,
	})
}

// close drops every later send.
func (p *progress) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}
