package mcpserver

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/internal/stdio"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/sessions"
)

// turnRunner runs one user turn on a session: the runtime, or a test's
// fake.
type turnRunner interface {
	ProcessUserTurn(ctx context.Context, req runtime.TurnRequest) (runtime.TurnResult, error)
}

// Machine-readable reasons of a prompt_send {"error":"prompt execution
// failed"} result.
const (
	reasonSessionBusy        = "session_busy"
	reasonDuplicateRequest   = "duplicate_request"
	reasonServiceClosed      = "service_closed"
	reasonSessionUnavailable = "session_unavailable"
)

// mainAgent is the agent of the sessions prompt_send creates.
const mainAgent = "main"

// abandonAfter bounds how long a cancelled turn is awaited before its
// request is answered anyway.
const abandonAfter = 10 * time.Second

// errPromptCancelled is the cause a prompt_cancel gives the turn context.
var errPromptCancelled = errors.New("cancelled by prompt_cancel")

// promptRecord is one prompt_send running on a connection, keyed by its
// JSON-RPC id and by its session.
type promptRecord struct {
	id        jsonrpc.ID
	taskID    string // "" unless the turn runs a task
	sessionID string
	// answered is closed once the request is answered.
	answered <-chan struct{}
	// commit is the turn's commit point: a cancel counts only if it wins
	// there, over the turn's final write.
	commit *runtime.Commit
	// prog sends the request's progress; a cancellation closes it first,
	// so nothing about a cancelled turn reaches the client any more.
	prog *progress
	// mu makes the side effects of a winning cancel (progress closed,
	// record removed, audit written) finish before the request settles.
	mu sync.Mutex
	// cleaned is set once a cancel's side effects ran (guarded by mu).
	cleaned bool
}

// register records rec as running, or returns why it cannot run.
func (c *connection) register(rec *promptRecord) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return reasonServiceClosed
	case c.byID[rec.id] != nil:
		return reasonDuplicateRequest
	case c.bySession[rec.sessionID] != nil:
		return reasonSessionBusy
	}
	c.byID[rec.id] = rec
	c.bySession[rec.sessionID] = rec
	return ""
}

func (c *connection) unregister(rec *promptRecord) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID[rec.id] == rec {
		delete(c.byID, rec.id)
	}
	if c.bySession[rec.sessionID] == rec {
		delete(c.bySession, rec.sessionID)
	}
}

// cancelPrompt cancels a running turn at its commit point and cleans up
// after it: a winning cancel stops the turn (no further model call, tool
// run or message write, and nothing of its result is ever written; the
// runtime kills the turn's processes and releases the session lease),
// declines the session's pending questions, removes the record and writes
// the mcp.request.cancelled audit record. It reports whether it won: false
// when the turn had already claimed its commit point or ended, or another
// cancel came first, and then it changes nothing.
func (c *connection) cancelPrompt(rec *promptRecord, reason string) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	cause := errPromptCancelled
	if reason != ReasonPromptCancel {
		cause = fmt.Errorf("MCP request cancelled: %s", reason)
	}
	if !rec.commit.Cancel(cause) {
		return false
	}
	c.cancelled(rec, reason)
	return true
}

// cancelled runs the side effects of a cancel that won rec's commit point,
// once; rec.mu is held.
func (c *connection) cancelled(rec *promptRecord, reason string) {
	if rec.cleaned {
		return
	}
	rec.cleaned = true
	rec.prog.close()
	c.s.questions.CancelSession(rec.sessionID)
	c.unregister(rec)
	c.s.audit(AuditRequestCancelled, rec.sessionID, RequestCancelledPayload{
		RequestID: rec.id.Raw(), SessionID: rec.sessionID, ClientID: c.s.clientID, Reason: reason, TaskID: rec.taskID,
	})
	c.s.log.Info("MCP prompt cancelled", "session_id", rec.sessionID, "reason", reason)
}

// settle removes the record of a turn that returned and reports whether a
// cancel won its commit point; it waits for a winning cancel's clean-up.
// A durable commit point refused by the store (a tasks/cancel won there)
// gets its clean-up here, with reason refused.
func (c *connection) settle(rec *promptRecord, refused string) (cancelled bool) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	c.unregister(rec)
	if rec.commit.Err() == nil {
		return false
	}
	c.cancelled(rec, refused)
	return true
}

// cancelAll cancels every running turn of the connection and refuses new
// ones.
func (c *connection) cancelAll(reason string) {
	c.mu.Lock()
	c.closed = true
	recs := make([]*promptRecord, 0, len(c.byID))
	for _, r := range c.byID {
		recs = append(recs, r)
	}
	c.mu.Unlock()
	for _, r := range recs {
		c.cancelPrompt(r, reason)
	}
}

// promptSend runs one turn, in a new session or an existing one.
func (c *connection) promptSend(ctx context.Context, req *mcp.CallToolRequest, a contracts.PromptSendArgs) (*mcp.CallToolResult, error) {
	s := c.s
	r := stdio.RequestOf(req)
	if r == nil {
		return nil, errors.New("prompt_send: the request did not come through the stdio connection")
	}
	created := a.SessionID == ""
	requested := a.SessionID
	if created {
		requested = s.newSessionID()
	}
	// The request record comes first: a refused append means nothing ran.
	if !s.auditRequest(AuditPromptRequested, requested, PromptRequestedPayload{
		RequestID: r.ID().Raw(), SessionID: requested, ClientID: s.clientID, NewSession: created,
	}) {
		return errorPayload(contracts.TextPromptExecutionFailed, reasonAuditUnavailable), nil
	}
	return c.runPrompt(ctx, promptRun{
		id: r.ID(), sessionID: requested, created: created, prompt: a.Prompt,
		answered: r.Answered(), prog: newProgress(ctx, req), commit: runtime.NewCommit(),
		endReason: func() string {
			if r.CancelledByPeer() {
				return ReasonRequestCancelled
			}
			return ReasonConnectionClosed
		},
	})
}

// promptRun is one prompt_send turn to run, its request record written: a
// plain request's, or a task's in its runner.
type promptRun struct {
	id        jsonrpc.ID
	taskID    string
	sessionID string // the session to continue, or to create (created)
	created   bool
	prompt    string
	answered  <-chan struct{}
	prog      *progress
	commit    *runtime.Commit
	// endReason names why ctx ended, for the cancel it causes.
	endReason func() string
	// refused is the cancel reason when a durable commit point is refused
	// (ReasonTaskCancel for a task).
	refused string
}

// runPrompt runs p to its end: the one path of every prompt_send turn,
// plain or a task's. ctx ending cancels the turn at its commit point.
func (c *connection) runPrompt(ctx context.Context, p promptRun) (*mcp.CallToolResult, error) {
	s := c.s
	var (
		sess sessions.Session
		err  error
	)
	created := p.created
	if created {
		now := s.now()
		sess, err = s.store.CreateSession(ctx, sessions.Session{
			ID: p.sessionID, AgentID: mainAgent, Title: sessions.Title(p.prompt, "MCP session"), Source: authz.SourceMCP,
			CreatedAt: now, UpdatedAt: now,
		})
		if err != nil {
			s.log.Warn("prompt_send: create session failed", "error", err)
			return errorPayload(contracts.TextPromptExecutionFailed, reasonSessionUnavailable), nil
		}
	} else if sess, err = s.store.GetSession(ctx, p.sessionID); err != nil {
		if errors.Is(err, sessions.ErrNotFound) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: contracts.TextInvalidPromptSession}
		}
		s.log.Warn("prompt_send: load session failed", "session_id", p.sessionID, "error", err)
		return errorPayload(contracts.TextPromptExecutionFailed, reasonSessionUnavailable), nil
	}
	sessionID := sess.ID

	rec := &promptRecord{id: p.id, taskID: p.taskID, sessionID: sessionID, answered: p.answered, commit: p.commit, prog: p.prog}
	if why := c.register(rec); why != "" {
		if created {
			c.dropIfEmpty(ctx, sessionID)
		}
		return errorPayload(contracts.TextPromptExecutionFailed, why), nil
	}
	// The request context ends when the client cancels the request or the
	// connection goes away; either cancels the turn with the right reason,
	// if the cancel wins over the turn's final write.
	requestEnded := func() { c.cancelPrompt(rec, p.endReason()) }
	stopWatch := context.AfterFunc(ctx, requestEnded)
	defer stopWatch()

	turnReq := runtime.TurnRequest{
		SessionID: sessionID,
		Text:      p.prompt,
		AgentID:   sess.AgentID,
		Request:   s.authzRequest(),
		RequestID: newTurnRequestID(),
		Commit:    rec.commit,
	}
	prog := rec.prog
	fwd := startTurnProgress(s.bus, turnReq, prog, func(d events.ToolEndData) { s.auditDenial(sessionID, d) })
	// The turn is cancelled only through its commit point (cancelPrompt),
	// never by the request context directly.
	res, err := c.runTurn(context.WithoutCancel(ctx), turnReq)
	if !stopWatch() && ctx.Err() != nil {
		// The watcher may still be running: let it finish (cancelPrompt
		// serialises on rec.mu); a second call changes nothing.
		requestEnded()
	}
	if c.settle(rec, p.refused) {
		// Cancelled: nothing of the turn's result was written, and nothing
		// of the turn reaches the client any more.
		prog.close()
		fwd.finish()
		if created {
			c.dropIfEmpty(ctx, sessionID)
		}
		return nil, errRequestCancelled
	}
	fwd.finish()
	prog.close()
	if err != nil {
		if created {
			c.dropIfEmpty(ctx, sessionID)
		}
		if errors.Is(err, sessions.ErrBusy) {
			return errorPayload(contracts.TextPromptExecutionFailed, reasonSessionBusy), nil
		}
		s.log.Warn("prompt_send: turn failed", "session_id", sessionID, "error", err)
		return errorPayload(contracts.TextPromptExecutionFailed, ""), nil
	}
	s.audit(AuditPromptCompleted, sessionID, PromptCompletedPayload{
		RequestID: rec.id.Raw(), SessionID: sessionID, ClientID: s.clientID, Failed: res.Failed, TaskID: rec.taskID,
	})
	return payloadResult(contracts.PromptSendResult{
		SessionID: sessionID, Text: res.Text, AssistantMsgID: res.AssistantMessageID, Failed: res.Failed,
	})
}

// runTurn runs the turn, and once a cancel won its commit point waits for
// it at most abandonAfter.
func (c *connection) runTurn(ctx context.Context, req runtime.TurnRequest) (runtime.TurnResult, error) {
	type outcome struct {
		res runtime.TurnResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				c.s.log.Error("turn panicked", "session_id", req.SessionID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				o = outcome{err: fmt.Errorf("turn panicked: %v", p)}
			}
			done <- o
		}()
		o.res, o.err = c.s.turns.ProcessUserTurn(ctx, req)
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-req.Commit.Done():
	}
	t := time.NewTimer(abandonAfter)
	defer t.Stop()
	select {
	case o := <-done:
		return o.res, o.err
	case <-t.C:
		c.s.log.Error("a cancelled turn did not stop; abandoning it", "session_id", req.SessionID)
		return runtime.TurnResult{}, req.Commit.Err()
	}
}

// promptCancel cancels the turn prompt_send started for sessionID on this
// connection, if it still runs, and waits (bounded) until that prompt_send
// has been answered.
func (c *connection) promptCancel(ctx context.Context, sessionID string) (*mcp.CallToolResult, error) {
	c.mu.Lock()
	rec := c.bySession[sessionID]
	c.mu.Unlock()
	cancelled := rec != nil && c.cancelPrompt(rec, ReasonPromptCancel)
	if cancelled {
		t := time.NewTimer(c.s.cancelWait)
		select {
		case <-rec.answered:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return payloadResult(contracts.PromptCancelResult{SessionID: sessionID, Cancelled: cancelled})
}

// dropIfEmpty deletes a session prompt_send created when nothing was
// written to it, so a failed or cancelled call leaves no orphan.
func (c *connection) dropIfEmpty(ctx context.Context, sessionID string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	sess, err := c.s.store.GetSession(ctx, sessionID)
	if err != nil {
		if !errors.Is(err, sessions.ErrNotFound) {
			c.s.log.Warn("prompt_send: check new session failed", "session_id", sessionID, "error", err)
		}
		return
	}
	if sess.HeadID != "" {
		return
	}
	if err := c.s.store.DeleteSession(ctx, sessionID); err != nil && !errors.Is(err, sessions.ErrNotFound) {
		c.s.log.Warn("prompt_send: delete empty session failed", "session_id", sessionID, "error", err)
	}
}

// newTurnRequestID returns the opaque id the runtime copies into every
// event of one turn; progress is matched to its request by it.
func newTurnRequestID() string {
	return "mcp_turn_" + rand.Text()
}
