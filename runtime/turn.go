package runtime

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// TurnRequest is one user message to answer. Everything the turn may do
// follows from its Speaker, made by authz and used whole for every tool
// call of the turn: its authority, source, rules, working directories and
// state directory. The turn checks no field of it; a Speaker that authz did
// not make is refused.
type TurnRequest struct {
	// SessionID names an existing session. Required.
	SessionID string
	// Text is what the speaker said. Required. The front end took it in
	// under prompt_send's rule (contracts.Validate, contracts.CheckPrompt:
	// not blank, no U+0000); the turn does not judge it again.
	Text string
	// AgentID is recorded with the user message.
	AgentID string
	// Speaker is who speaks: the authority of the user message and of every
	// tool call the turn makes. Required (authz.NewMCPClient,
	// authz.NewOwner).
	Speaker authz.Speaker
	// RequestID is an opaque id copied into every event of the turn and
	// kept in the metadata of its user message and of its reply, so that
	// [StoredReply] finds the reply of a turn whose caller is gone.
	RequestID string
	// Observe receives the turn's events as they happen, in order and one
	// at a time: turn.start, turn.text (every streamed fragment),
	// tool.start, question.asked, approval.standing, tool.end and turn.end
	// (nil: none). The turn waits while it runs. No event holds the user's
	// text or a tool's arguments.
	Observe events.Observer
	// Commit, when set, is the turn's commit point (see [Commit]): the
	// caller keeps it to cancel the turn and learn, atomically, whether the
	// cancel won over the final write. Nil: the turn makes its own, and
	// only ctx cancels it.
	Commit *Commit
}

// TurnResult is how a turn ended. Failed turns (no provider configured, a
// provider error after retries, the step limit) still store an assistant
// message holding the failure text, and return a nil error.
type TurnResult struct {
	// Text is the assistant's final reply, or the failure text.
	Text string
	// UserMessageID and AssistantMessageID name the stored messages.
	UserMessageID      string
	AssistantMessageID string
	// Failed reports that the turn did not produce a model answer.
	Failed bool
	// ErrorClass says why, when Failed: a provider.Class value,
	// ErrorClassMaxSteps or ErrorClassNotConfigured.
	ErrorClass string
}

// Error classes of a failed turn beyond the provider's classes.
const (
	ErrorClassMaxSteps      = "max_steps"
	ErrorClassNotConfigured = "not_configured"
)

// ErrInvalidTurn is wrapped by the error of a malformed [TurnRequest].
var ErrInvalidTurn = errors.New("invalid turn request")

// Reason codes of tool results the turn loop makes itself.
const (
	reasonUnknownTool = "UNKNOWN_TOOL"
	reasonStepLimit   = "STEP_LIMIT"
)

func (req TurnRequest) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidTurn, fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(req.SessionID) == "" {
		return bad("session id is empty")
	}
	if req.Text == "" {
		return bad("text is empty")
	}
	if err := req.Speaker.Check(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidTurn, err)
	}
	return nil
}

// errStopped is returned inside a turn once it observes its context ended.
var errStopped = errors.New("turn stopped")

// ProcessUserTurn answers req.Text in session req.SessionID:
//
//  1. take the session's turn lease (held elsewhere: an error wrapping
//     sessions.ErrBusy, and nothing is written);
//  2. read the active branch as the model's history, from the head
//     backwards only as far as Options.ContextTokens reaches;
//  3. store the user message under the head (moving the head), with the
//     speaker's authority in its metadata; a non-owner's text reaches the
//     model inside a JSON speaker envelope;
//  4. call the model, run the tools it asks for through the gate with the
//     request's authority, and call it again, at most Options.MaxSteps
//     model calls;
//  5. store the tool-call, tool-result and final assistant messages as one
//     chain under the user message and move the head, in one transaction;
//  6. release the lease.
//
// Events, to req.Observe: turn.start, turn.text, tool.start,
// tool.end and turn.end, each with the request id; none holds user text or
// tool arguments.
//
// Cancelling ctx, or a winning req.Commit.Cancel, stops the turn at once
// unless it has claimed its commit point (right before its final write):
// no model call, tool execution or message write happens after the cancel
// is seen, running tools are cancelled, a late model answer is discarded,
// the session's pending questions are declined and the lease is released.
// The user message stays; nothing of the turn's result is ever written.
// The error then matches the cancel's cause (ctx's error for ctx) with
// errors.Is and the result is zero. A cancel that comes after the claim
// loses: the write completes and its outcome is returned as if no cancel
// had come. Cancelling ctx while the lease is being taken never leaves the
// lease behind.
func (r *Runtime) ProcessUserTurn(ctx context.Context, req TurnRequest) (TurnResult, error) {
	if err := req.validate(); err != nil {
		return TurnResult{}, err
	}
	sid := req.SessionID
	commit := req.Commit
	if commit == nil {
		commit = NewCommit()
	}
	// ctx's cancellation reaches the turn at once, and its commit point
	// through the watch below and the claim (which checks ctx itself), so a
	// cancel and the final write cannot both win.
	ctx, span := r.startTurnSpan(ctx, req)
	spanErr := ""
	defer func() { endSpan(span, spanErr) }()
	turnCtx, cancelTurn := context.WithCancelCause(ctx)
	defer cancelTurn(nil)
	if ctx.Err() != nil {
		commit.Cancel(context.Cause(ctx))
	}
	if err := commit.bind(cancelTurn); err != nil {
		return TurnResult{}, fmt.Errorf("turn on session %q: %w", sid, err)
	}
	defer commit.settle(ctx) //nolint:errcheck // settled below; this covers a panic
	stopWatch := context.AfterFunc(ctx, func() { commit.Cancel(context.Cause(ctx)) })
	defer stopWatch()

	owner := "turn/" + rand.Text()
	store := r.opts.Store
	// The store guarantees a failed acquire, a cancelled one included,
	// leaves no lease behind.
	lctx, lspan := startSpan(turnCtx, "acquire turn lease")
	err := store.AcquireTurn(lctx, sid, owner, r.opts.LeaseTTL)
	endSpan(lspan, errClass(err))
	if err != nil {
		spanErr = errClass(err)
		if cerr := commit.settle(ctx); cerr != nil {
			return TurnResult{}, fmt.Errorf("turn on session %q: %w", sid, cerr)
		}
		return TurnResult{}, fmt.Errorf("start turn on session %q: %w", sid, err)
	}

	declineOnCancel := context.AfterFunc(turnCtx, func() { r.cancelQuestions(sid) })
	stopRenew := r.keepLease(turnCtx, cancelTurn, sid, owner)
	req.Observe.Emit(events.TurnStart, sid, events.TurnStartData{RequestID: req.RequestID, SessionID: sid})

	cleaned := false
	cleanup := func() {
		cleaned = true
		declineOnCancel()
		stopRenew()
		cancelTurn(nil)
		r.release(ctx, sid, owner)
	}
	defer func() {
		if !cleaned { // a panic in a provider: still free the session
			cleanup()
		}
	}()

	t := &turn{r: r, req: req, owner: owner, commit: commit, callerCtx: ctx}
	res, err := t.run(turnCtx)

	stopped := errors.Is(err, errStopped)
	cause := context.Cause(turnCtx)
	cleanup()
	if stopped {
		r.cancelQuestions(sid)
	}
	req.Observe.Emit(events.TurnEnd, sid, events.TurnEndData{
		RequestID: req.RequestID, SessionID: sid,
		Failed: res.Failed, ErrorClass: res.ErrorClass, Cancelled: stopped,
	})
	switch {
	case stopped:
		spanErr = "cancelled"
	case err != nil:
		spanErr = errClass(err)
	case res.Failed:
		spanErr = res.ErrorClass
	default:
		r.captureReply(span, res.Text)
	}
	switch cerr := commit.settle(ctx); {
	case cerr != nil:
		return TurnResult{}, fmt.Errorf("turn on session %q: %w", sid, cerr)
	case stopped:
		return TurnResult{}, fmt.Errorf("turn on session %q: %w", sid, cause)
	case err != nil:
		return TurnResult{}, fmt.Errorf("turn on session %q: %w", sid, err)
	}
	return res, nil
}

func (r *Runtime) cancelQuestions(sid string) {
	if r.opts.Questions != nil {
		r.opts.Questions.CancelSession(sid)
	}
}

// keepLease renews the turn lease every third of its TTL until the turn
// ends; losing it cancels the turn. The returned func stops renewing and
// waits for the renewer to exit.
func (r *Runtime) keepLease(ctx context.Context, cancelTurn context.CancelCauseFunc, sid, owner string) func() {
	ttl := r.opts.LeaseTTL
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cctx, ccancel := context.WithTimeout(rctx, ttl/3)
			err := r.opts.Store.RenewTurn(cctx, sid, owner, ttl)
			ccancel()
			switch {
			case errors.Is(err, sessions.ErrLeaseLost):
				r.logger.Warn("turn lease lost; stopping the turn", "session_id", sid)
				cancelTurn(fmt.Errorf("renew turn lease: %w", err))
				return
			case err != nil && rctx.Err() == nil:
				r.logger.Warn("renew turn lease", "session_id", sid, "err", err)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// release drops the lease with a fresh context, so that a cancelled turn
// still releases it.
func (r *Runtime) release(ctx context.Context, sid, owner string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.opts.Store.ReleaseTurn(rctx, sid, owner); err != nil {
		r.logger.Warn("release turn lease (it expires on its own)", "session_id", sid, "err", err)
	}
}

// turn is the state of one ProcessUserTurn call.
type turn struct {
	r      *Runtime
	req    TurnRequest
	owner  string // the turn lease's owner
	commit *Commit
	// callerCtx is ProcessUserTurn's ctx: its end is a cancel of the turn.
	callerCtx context.Context
	userID    string
	chain     []sessions.NewMessage
}

func (t *turn) run(ctx context.Context) (TurnResult, error) {
	store, sid := t.r.opts.Store, t.req.SessionID
	auth := t.req.Speaker.Authority()
	latest := provider.Message{Role: provider.RoleUser, Content: modelText(t.req.Text, &auth)}
	specs := t.offer()
	w, err := t.r.readWindow(ctx, sid, t.r.budget(), estimateFixed(t.r.system, specs), latest)
	if err != nil {
		return t.storeErr(ctx, "read the active branch", err)
	}
	msgs := w.msgs

	if ctx.Err() != nil {
		return TurnResult{}, errStopped
	}
	meta := metadata{Authority: &auth, Source: t.req.Speaker.Source(), AgentID: t.req.AgentID, RequestID: t.req.RequestID}
	if w.before != (prefix{}) {
		meta.Before = &w.before // nothing before: a read of it reaches the root anyway
	}
	user := sessions.NewMessage{Role: sessions.RoleUser, Content: t.req.Text, Metadata: meta.encode()}
	sctx, sspan := startSpan(ctx, "store user message")
	saved, err := store.AppendMessages(sctx, sid, w.head, storable([]sessions.NewMessage{user}), true)
	endSpan(sspan, errClass(err))
	if err != nil {
		return t.storeErr(ctx, "store the user message", err)
	}
	t.userID = saved[0].ID
	msgs = append(msgs, latest)

	p := t.r.opts.Provider
	if p == nil {
		return t.fail(ctx, ErrorClassNotConfigured, "Turn failed: "+t.r.opts.ProviderErr.Error())
	}
	tctx, stopTimeout := t.r.turnContext(ctx)
	defer stopTimeout()
	chars := 0 // streamed so far; consumers coalesce the fragments
	for step := 0; ; step++ {
		if step == t.r.opts.MaxSteps {
			return t.fail(ctx, ErrorClassMaxSteps, fmt.Sprintf(
				"Turn failed: the model was still calling tools after %d steps, the limit of one turn; ask again to continue", step))
		}
		if ctx.Err() != nil {
			return TurnResult{}, errStopped
		}
		sent, omitted := t.r.fit(msgs, specs, w.unread)
		cctx, chat := t.r.startChat(tctx, p)
		resp, err := p.Stream(cctx, provider.Request{System: t.r.system, Messages: sent, Tools: specs}, func(d provider.Delta) {
			if d.Text == "" {
				return
			}
			chars += utf8.RuneCountInString(d.Text)
			t.req.Observe.Emit(events.TextProgress, sid, events.TextData{RequestID: t.req.RequestID, Text: d.Text, Chars: chars})
		})
		chat.end(resp, err)
		if ctx.Err() != nil {
			return TurnResult{}, errStopped // a late answer is discarded
		}
		if err != nil {
			return t.fail(ctx, string(provider.ClassOf(err)), "Turn failed: "+err.Error())
		}
		if len(resp.ToolCalls) == 0 {
			t.chain = append(t.chain, sessions.NewMessage{Role: sessions.RoleAssistant, Content: resp.Text,
				Metadata: metadata{Provider: p.Name(), StopReason: resp.StopReason, Usage: resp.Usage, HistoryOmitted: omitted, RequestID: t.req.RequestID, Reply: true}.encode()})
			return t.write(ctx, TurnResult{Text: resp.Text})
		}

		calls := make([]toolCallData, len(resp.ToolCalls))
		for i, c := range resp.ToolCalls {
			calls[i] = toolCallData{ID: c.ID, Name: c.Name, Arguments: safeArgs(c.Arguments)}
		}
		t.chain = append(t.chain, sessions.NewMessage{Role: sessions.RoleAssistant, Content: resp.Text,
			Metadata: metadata{ToolCalls: calls, Provider: p.Name(), Usage: resp.Usage, HistoryOmitted: omitted}.encode()})
		am := provider.Message{Role: provider.RoleAssistant, Content: resp.Text}
		for _, c := range calls {
			am.ToolCalls = append(am.ToolCalls, provider.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		msgs = append(msgs, am)

		last := step == t.r.opts.MaxSteps-1
		for i, c := range calls {
			var res tool.Result
			if last {
				// The model could never see these results: do not run them.
				res = tool.ErrorResult(reasonStepLimit, "[not run] the turn reached its step limit")
			} else {
				if ctx.Err() != nil {
					return TurnResult{}, errStopped
				}
				res = t.r.RunTool(tctx, t.req.Speaker, ToolCall{SessionID: sid, RequestID: t.req.RequestID,
					ID: c.ID, Name: c.Name, Arguments: resp.ToolCalls[i].Arguments, Observe: t.req.Observe})
				if ctx.Err() != nil {
					return TurnResult{}, errStopped
				}
			}
			text := resultText(res)
			_, denied := res.Denial()
			t.chain = append(t.chain, sessions.NewMessage{Role: sessions.RoleTool, Content: text,
				Metadata: metadata{ToolCallID: c.ID, ToolName: c.Name, IsError: res.IsError, Denied: denied, ReasonCode: res.ReasonCode()}.encode()})
			msgs = append(msgs, provider.Message{Role: provider.RoleTool, Content: text, ToolCallID: c.ID, ToolName: c.Name, IsError: res.IsError})
		}
	}
}

// offer returns the specs, for the model, of the tools the speaker's tier
// may use. A registered tool that was not offered still goes through the
// gate when the model calls it, which denies it with its reason.
func (t *turn) offer() []provider.ToolSpec {
	var specs []provider.ToolSpec
	for _, tl := range t.r.registry().List() {
		if _, ok := authz.ToolAllowed(t.req.Speaker.Authority().Tier, tl.Name(), tl.Capability()); !ok {
			continue
		}
		specs = append(specs, provider.ToolSpec{Name: tl.Name(), Description: tl.Description(), InputSchema: tl.InputSchema()})
	}
	return specs
}

// fail ends the turn with a failure text stored as the assistant message.
func (t *turn) fail(ctx context.Context, class, text string) (TurnResult, error) {
	t.chain = append(t.chain, sessions.NewMessage{Role: sessions.RoleAssistant, Content: text,
		Metadata: metadata{Failed: true, ErrorClass: class, RequestID: t.req.RequestID, Reply: true}.encode()})
	return t.write(ctx, TurnResult{Text: text, Failed: true, ErrorClass: class})
}

// write stores the turn's chain under the user message and moves the head,
// in one transaction, once it has claimed the turn's commit point. From the
// claim on, no cancel can stop it: the write runs on a context free of the
// turn's cancellation, bounded by the lease TTL it has just renewed.
func (t *turn) write(ctx context.Context, res TurnResult) (TurnResult, error) {
	if !t.commit.claim(t.callerCtx, ctx) {
		return TurnResult{}, errStopped
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.r.opts.LeaseTTL)
	defer cancel()
	// Renewing proves the lease is still ours and keeps anyone from taking
	// it over for a whole TTL, far longer than the write below: a turn whose
	// lease expired (its renewals failed) must not move the head under a
	// turn that took the session over.
	if err := t.r.opts.Store.RenewTurn(wctx, t.req.SessionID, t.owner, t.r.opts.LeaseTTL); err != nil {
		if errors.Is(err, sessions.ErrLeaseLost) {
			return TurnResult{}, fmt.Errorf("store the reply on session %q: %w", t.req.SessionID, err)
		}
		return TurnResult{}, fmt.Errorf("renew the turn lease before storing the reply: %w", err)
	}
	sctx, sspan := startSpan(wctx, "store reply")
	saved, err := t.r.opts.Store.AppendMessages(sctx, t.req.SessionID, t.userID, storable(t.chain), true)
	endSpan(sspan, errClass(err))
	if err != nil {
		return TurnResult{}, fmt.Errorf("store the reply: %w", err)
	}
	res.UserMessageID = t.userID
	res.AssistantMessageID = saved[len(saved)-1].ID
	return res, nil
}

func (t *turn) storeErr(ctx context.Context, what string, err error) (TurnResult, error) {
	if ctx.Err() != nil {
		return TurnResult{}, errStopped
	}
	return TurnResult{}, fmt.Errorf("%s: %w", what, err)
}

// storable makes message text safe for every store backend: PostgreSQL text
// cannot hold NUL bytes or invalid UTF-8 (a binary tool output, a prompt
// with \u0000), so both become U+FFFD, the same on every backend.
func storable(msgs []sessions.NewMessage) []sessions.NewMessage {
	for i := range msgs {
		c := msgs[i].Content
		if utf8.ValidString(c) && !strings.ContainsRune(c, 0) {
			continue
		}
		c = strings.ToValidUTF8(c, "\uFFFD")
		msgs[i].Content = strings.ReplaceAll(c, "\x00", "\uFFFD")
	}
	return msgs
}
