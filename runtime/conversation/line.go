package conversation

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// AbandonAfter bounds how long a cancelled turn that does not stop (a tool
// or a model call that ignores its context) is awaited before Send returns
// anyway; the turn is then given up, and nothing of it is written.
const AbandonAfter = 10 * time.Second

// dropTimeout bounds the removal of a new session nothing was written to.
const dropTimeout = 10 * time.Second

// Line is one speaker's conversation with the host: an MCP connection, an
// owner console, a task runner. It knows the turns running on it (by
// request id and by session: one turn per session per line), cancels them
// at their commit point, and writes their audit records. It is safe for
// concurrent use.
type Line struct {
	svc      *Service
	sp       authz.Speaker
	rec      records
	via      string
	clientID string // the MCP client's id, "" for other speakers

	mu        sync.Mutex
	byID      map[any]*running
	bySession map[string]*running
	closed    bool
}

// Speaker returns the line's speaker.
func (l *Line) Speaker() authz.Speaker { return l.sp }

// Turn is one message to answer on a line. Make it with [Line.NewTurn] (or,
// for a turn admitted earlier, from its recorded fields); admit it with
// [Line.Admit] before anything of it happens, then run it with [Line.Send].
type Turn struct {
	// RequestID is the front end's id of the request (a JSON-RPC id: a
	// string or an integer): in its audit records, unique among the turns
	// running on the line, and the key of [Line.Cancel].
	RequestID any
	// SessionID is the session to continue, or with NewSession the id of
	// the session to create.
	SessionID  string
	NewSession bool
	// Text is what the speaker said, already checked at the front end's
	// boundary (contracts' prompt rule).
	Text string
	// TaskID is the durable task the turn runs, "" for none; its records
	// name it.
	TaskID string
}

// NewTurn returns the turn of request requestID saying text in session
// sessionID, or in a new session ("": its id is chosen now, so the request
// record can name it before it exists).
func (l *Line) NewTurn(requestID any, sessionID, text string) Turn {
	t := Turn{RequestID: requestID, SessionID: sessionID, Text: text}
	if sessionID == "" {
		t.SessionID, t.NewSession = l.svc.newSessionID(l.rec.idPrefix), true
	}
	return t
}

// Admit writes t's request record (an MCP client's prompt request; the
// owner's console writes none) before anything of t happens. It returns
// [ErrAuditUnavailable] when the record cannot be written and
// audit.on_failure is refuse: then nothing of t may run.
func (l *Line) Admit(ctx context.Context, t Turn) error {
	return l.admit(ctx, l.rec.requested, t.SessionID, PromptRequestedPayload{
		RequestID: t.RequestID, SessionID: t.SessionID, ClientID: l.clientID, NewSession: t.NewSession, TaskID: t.TaskID,
		TraceID: traceIDOf(ctx),
	})
}

// SendOptions are how the front end follows and ends one turn.
type SendOptions struct {
	// Observe receives the turn's events (runtime.TurnRequest.Observe),
	// after the line has audited its denials. Nil: none.
	Observe events.Observer
	// Commit is the turn's commit point (nil: a new one). A durable task's
	// runner passes runtime.NewDurableCommit.
	Commit *runtime.Commit
	// OnCancel runs once, at once, when a cancel wins the turn's commit
	// point, before the cancel's record is written: a front end stops
	// reporting the turn's progress there. Nil: nothing.
	OnCancel func()
	// Answered is closed once the front end has answered the request:
	// [Line.CancelSession] hands it to the canceller to wait on. Nil: when
	// Send returns.
	Answered <-chan struct{}
	// EndReason names why ctx ended, for the cancel that causes (nil:
	// [ReasonConnectionClosed]).
	EndReason func() string
	// Refused is the cancel reason recorded when a durable commit point
	// refuses the final write (a tasks/cancel won there). Default
	// [ReasonRequestCancelled].
	Refused string
}

// Reply is how a turn ended that ran to its end.
type Reply struct {
	// SessionID is the session the turn ran on (a new one's id too).
	SessionID string
	// Text is the assistant's reply, or the failure text when Failed.
	Text               string
	UserMessageID      string
	AssistantMessageID string
	// Failed reports that the turn produced no model answer; ErrorClass
	// says why.
	Failed     bool
	ErrorClass string
}

// running is one turn running on the line.
type running struct {
	turn     Turn
	traceID  string // the request's trace, for the cancel's record
	answered <-chan struct{}
	commit   *runtime.Commit
	// onCancel runs once a cancel won, before anything else of the cancel
	// is seen (the front end stops reporting progress).
	onCancel func()
	// mu makes the side effects of a winning cancel (record removed,
	// questions declined, audit written) finish before the turn settles.
	mu      sync.Mutex
	cleaned bool // guarded by mu
}

// register records r as running, or returns why it cannot run.
func (l *Line) register(r *running) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrClosed
	case r.turn.RequestID != nil && l.byID[r.turn.RequestID] != nil:
		return ErrDuplicateRequest
	case l.bySession[r.turn.SessionID] != nil:
		return ErrSessionBusy
	}
	if r.turn.RequestID != nil {
		l.byID[r.turn.RequestID] = r
	}
	l.bySession[r.turn.SessionID] = r
	return nil
}

func (l *Line) unregister(r *running) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id := r.turn.RequestID; id != nil && l.byID[id] == r {
		delete(l.byID, id)
	}
	if l.bySession[r.turn.SessionID] == r {
		delete(l.bySession, r.turn.SessionID)
	}
}

// Send runs t, admitted, to its end: it opens t's session (creating it
// with NewSession, with its record), runs the turn with the line's speaker
// at its commit point, audits its denials, and records how it ended. ctx
// ending cancels the turn at its commit point (reason o.EndReason); the
// turn itself is cancelled only there, never by ctx directly, so a cancel
// and the final write never both win.
//
// It returns the reply of a turn that ran to its end, or an error: a
// *[CancelledError] (nothing of the result was written), one wrapping
// [ErrSessionNotFound], [ErrSessionUnavailable], [ErrSessionBusy],
// [ErrDuplicateRequest] or [ErrClosed] (nothing ran), or the turn's own
// failure. A new session nothing was written to is removed again.
func (l *Line) Send(ctx context.Context, t Turn, o SendOptions) (Reply, error) {
	sess, err := l.openSession(ctx, t)
	if err != nil {
		return Reply{}, err
	}
	commit := o.Commit
	if commit == nil {
		commit = runtime.NewCommit()
	}
	done := make(chan struct{})
	defer close(done)
	// r is complete before it is registered: from then on a cancel from
	// another goroutine (CancelSession, Close) may read it.
	cancelled := make(chan struct{})
	r := &running{turn: t, traceID: traceIDOf(ctx), answered: o.Answered, commit: commit, onCancel: func() {
		close(cancelled)
		if o.OnCancel != nil {
			o.OnCancel()
		}
	}}
	if r.answered == nil {
		r.answered = done
	}
	if err := l.register(r); err != nil {
		l.dropIfEmpty(ctx, t)
		return Reply{}, err
	}
	endReason := o.EndReason
	if endReason == nil {
		endReason = func() string { return ReasonConnectionClosed }
	}
	refused := o.Refused
	if refused == "" {
		refused = ReasonRequestCancelled
	}
	// The request context ends when the front end withdraws the request or
	// goes away; either cancels the turn with its reason, if the cancel wins
	// over the turn's final write.
	requestEnded := func() { l.cancel(r, endReason()) }
	stopWatch := context.AfterFunc(ctx, requestEnded)
	defer stopWatch()

	observe := l.observer(t, traceIDOf(ctx), o.Observe, cancelled)
	req := runtime.TurnRequest{
		SessionID: sess.ID, Text: t.Text, AgentID: sess.AgentID, Speaker: l.sp,
		RequestID: turnRequestID(t), Commit: commit, Observe: observe,
	}
	res, err := l.runTurn(context.WithoutCancel(ctx), req)
	if !stopWatch() && ctx.Err() != nil {
		// The watcher may still be running: let it finish (cancel serialises
		// on r.mu); a second call changes nothing.
		requestEnded()
	}
	if reason, ok := l.settle(r, refused); ok {
		l.dropIfEmpty(ctx, t)
		return Reply{}, &CancelledError{Reason: reason}
	}
	if err != nil {
		l.dropIfEmpty(ctx, t)
		if errors.Is(err, sessions.ErrBusy) {
			return Reply{}, fmt.Errorf("%w: %w", ErrSessionBusy, err)
		}
		l.svc.log.WarnContext(ctx, "turn failed", "session_id", sess.ID, "error", err)
		return Reply{}, err
	}
	reply := replyOf(sess.ID, res)
	l.Completed(ctx, t, reply)
	return reply, nil
}

// replyOf is the Reply of a turn on sessionID that ended with res.
func replyOf(sessionID string, res runtime.TurnResult) Reply {
	return Reply{SessionID: sessionID, Text: res.Text, UserMessageID: res.UserMessageID, AssistantMessageID: res.AssistantMessageID,
		Failed: res.Failed, ErrorClass: res.ErrorClass}
}

// Completed writes the record of turn t that ran to its end with reply.
// Send writes it; a caller that finishes a durable task's turn from its
// StoredReply writes it for the runner that could not.
func (l *Line) Completed(ctx context.Context, t Turn, reply Reply) {
	l.Record(ctx, l.rec.completed, reply.SessionID, PromptCompletedPayload{
		RequestID: t.RequestID, SessionID: reply.SessionID, ClientID: l.clientID, Failed: reply.Failed, TaskID: t.TaskID,
		TraceID: traceIDOf(ctx),
	})
}

// StoredReply returns the reply durable task turn t (t.TaskID set) stored
// in its session, found false when the session holds none: a runner that
// stopped after its turn's final write left the reply there without
// answering. It writes nothing.
func (l *Line) StoredReply(ctx context.Context, t Turn) (Reply, bool, error) {
	if t.TaskID == "" {
		return Reply{}, false, errors.New("conversation: StoredReply needs a durable task's turn (Turn.TaskID)")
	}
	branch, err := l.svc.store.Branch(ctx, t.SessionID)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		return Reply{}, false, nil
	case err != nil:
		return Reply{}, false, fmt.Errorf("%w: %w", ErrSessionUnavailable, err)
	}
	res, found := runtime.StoredReply(branch, turnRequestID(t))
	if !found {
		return Reply{}, false, nil
	}
	return replyOf(t.SessionID, res), true, nil
}

// openSession is the one place a conversation's session is created: its
// id chosen by NewTurn, the agent, the speaker's source, the title from
// the text, and its record. An existing session is read.
func (l *Line) openSession(ctx context.Context, t Turn) (sessions.Session, error) {
	if !t.NewSession {
		return l.svc.Session(ctx, t.SessionID)
	}
	now := l.svc.now()
	sess, err := l.svc.store.CreateSession(ctx, sessions.Session{
		ID: t.SessionID, AgentID: Agent, Title: sessions.Title(t.Text, l.rec.untitled), Source: l.sp.Source(),
		CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		l.svc.log.Warn("create session failed", "error", err)
		return sessions.Session{}, fmt.Errorf("%w: %w", ErrSessionUnavailable, err)
	}
	a := l.sp.Authority()
	l.Record(ctx, l.rec.sessionCreated, sess.ID, OwnerSessionCreatedPayload{
		SessionID: sess.ID, Source: l.sp.Source(), SpeakerID: a.SpeakerID, PrincipalID: a.PrincipalID, Command: l.via,
	})
	return sess, nil
}

// observer is the turn's observer: the line audits every denial and
// declines the questions of a speaker nobody can ask, then hands the event
// to the front end's, unless a cancel won (nothing of a cancelled turn
// reaches the front end any more).
func (l *Line) observer(t Turn, traceID string, next events.Observer, cancelled <-chan struct{}) events.Observer {
	return func(e events.Event) {
		switch d := e.Data.(type) {
		case events.ToolEndData:
			if d.Denied {
				l.Record(context.Background(), l.rec.denied, t.SessionID, ToolDeniedPayload{
					Tool: d.Tool, ReasonCode: d.ReasonCode, Capability: d.Capability, ClientID: l.clientID, InTurn: true, TraceID: traceID,
				})
			}
		case events.QuestionData:
			if !l.sp.Interactive() && l.svc.qs != nil {
				if l.svc.qs.Resolve(d.QuestionID, questions.Answer{Status: questions.StatusDeclined}) {
					l.svc.log.Info("declined a question nobody on this line can answer", "session_id", e.SessionID, "question_id", d.QuestionID)
				}
				return
			}
		}
		select {
		case <-cancelled:
			return
		default:
		}
		if next != nil {
			next(e)
		}
	}
}

// runTurn runs the turn, and once a cancel won its commit point waits for
// it at most AbandonAfter.
func (l *Line) runTurn(ctx context.Context, req runtime.TurnRequest) (runtime.TurnResult, error) {
	type outcome struct {
		res runtime.TurnResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				l.svc.log.Error("turn panicked", "session_id", req.SessionID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				o = outcome{err: fmt.Errorf("turn panicked: %v", p)}
			}
			done <- o
		}()
		o.res, o.err = l.svc.turns.ProcessUserTurn(ctx, req)
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-req.Commit.Done():
	}
	t := time.NewTimer(AbandonAfter)
	defer t.Stop()
	select {
	case o := <-done:
		return o.res, o.err
	case <-t.C:
		l.svc.log.Error("a cancelled turn did not stop; abandoning it", "session_id", req.SessionID)
		return runtime.TurnResult{}, req.Commit.Err()
	}
}

// cancel cancels r at its commit point and cleans up after it: a winning
// cancel stops the turn (no further model call, tool run or message write,
// and nothing of its result is ever written; the runtime kills the turn's
// processes and releases the session lease), declines the session's
// pending questions, removes r and writes the cancel record. It reports
// whether it won: false when the turn had already claimed its commit
// point or ended, or another cancel came first, and then it changes
// nothing.
func (l *Line) cancel(r *running, reason string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.commit.Cancel(&CancelledError{Reason: reason}) {
		return false
	}
	l.cancelled(r, reason)
	return true
}

// cancelled runs the side effects of a cancel that won r's commit point,
// once; r.mu is held.
func (l *Line) cancelled(r *running, reason string) {
	if r.cleaned {
		return
	}
	r.cleaned = true
	if r.onCancel != nil {
		r.onCancel()
	}
	if l.svc.qs != nil {
		l.svc.qs.CancelSession(r.turn.SessionID)
	}
	l.unregister(r)
	l.Record(context.Background(), l.rec.cancelled, r.turn.SessionID, RequestCancelledPayload{
		RequestID: r.turn.RequestID, SessionID: r.turn.SessionID, ClientID: l.clientID, Reason: reason, TaskID: r.turn.TaskID,
		TraceID: r.traceID,
	})
	l.svc.log.Info("turn cancelled", "session_id", r.turn.SessionID, "reason", reason)
}

// settle removes r once its turn returned and reports whether a cancel
// won its commit point, and with which reason; it waits for a winning
// cancel's clean-up. A durable commit point the store refused gets its
// clean-up here, with reason refused.
func (l *Line) settle(r *running, refused string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l.unregister(r)
	if r.commit.Err() == nil {
		return "", false
	}
	l.cancelled(r, refused)
	var ce *CancelledError
	reason := refused
	if errors.As(r.commit.Err(), &ce) {
		reason = ce.Reason
	}
	return reason, true
}

// CancelSession cancels the turn running on sessionID on this line, if a
// cancel still wins its commit point, with reason. It reports whether it
// did, and the channel the turn's front end closes once it has answered
// the turn's request (to wait on before answering the cancel itself).
func (l *Line) CancelSession(sessionID, reason string) (cancelled bool, answered <-chan struct{}) {
	l.mu.Lock()
	r := l.bySession[sessionID]
	l.mu.Unlock()
	if r == nil || !l.cancel(r, reason) {
		return false, nil
	}
	return true, r.answered
}

// Cancel cancels the turn of request requestID running on this line, if a
// cancel still wins its commit point, with reason, and reports whether it
// did.
func (l *Line) Cancel(requestID any, reason string) bool {
	l.mu.Lock()
	r := l.byID[requestID]
	l.mu.Unlock()
	return r != nil && l.cancel(r, reason)
}

// Running reports whether a turn runs on sessionID on this line.
func (l *Line) Running(sessionID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bySession[sessionID] != nil
}

// Close cancels every turn running on the line with reason and refuses new
// ones ([ErrClosed]).
func (l *Line) Close(reason string) {
	l.mu.Lock()
	l.closed = true
	rs := make([]*running, 0, len(l.bySession))
	for _, r := range l.bySession {
		rs = append(rs, r)
	}
	l.mu.Unlock()
	for _, r := range rs {
		l.cancel(r, reason)
	}
}

// dropIfEmpty deletes the session t created when nothing was written to
// it, so a failed or cancelled turn leaves no orphan.
func (l *Line) dropIfEmpty(ctx context.Context, t Turn) {
	if !t.NewSession {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropTimeout)
	defer cancel()
	sess, err := l.svc.store.GetSession(ctx, t.SessionID)
	if err != nil {
		if !errors.Is(err, sessions.ErrNotFound) {
			l.svc.log.Warn("check a new session failed", "session_id", t.SessionID, "error", err)
		}
		return
	}
	if sess.HeadID != "" {
		return
	}
	if err := l.svc.store.DeleteSession(ctx, t.SessionID); err != nil && !errors.Is(err, sessions.ErrNotFound) {
		l.svc.log.Warn("delete an empty new session failed", "session_id", t.SessionID, "error", err)
	}
}

// turnRequestID returns the opaque id the runtime copies into every event
// of turn t and keeps with its messages: a durable task's turn is named by
// its task (a task's turn stores one reply at most), so that its reply is
// found again (StoredReply); any other turn by a random id.
func turnRequestID(t Turn) string {
	if t.TaskID != "" {
		return "task/" + t.TaskID
	}
	return "turn_" + rand.Text()
}

// ToolCall is one direct call of a runtime tool by the line's speaker (an
// MCP client's tool_call).
type ToolCall struct {
	// RequestID is the front end's request id, in the call's records.
	RequestID any
	// ID is the call id the tool sees.
	ID string
	// Name is a registered tool; the front end decided it may be called.
	Name string
	// Arguments is the arguments object (empty means {}).
	Arguments json.RawMessage
	// Update receives the tool's progress lines (nil: dropped).
	Update func(string)
}

// CallTool runs call for the line's speaker: its request record first
// ([ErrAuditUnavailable] when refused: nothing ran), then the one tool
// path (runtime.Runtime.RunTool: arguments before the gate, then the
// tool), and the record of a denial.
func (l *Line) CallTool(ctx context.Context, call ToolCall) (tool.Result, error) {
	if err := l.admit(ctx, l.rec.toolRequested, "", ToolRequestedPayload{RequestID: call.RequestID, Tool: call.Name, ClientID: l.clientID, TraceID: traceIDOf(ctx)}); err != nil {
		return tool.Result{}, err
	}
	res := l.svc.rt.RunTool(ctx, l.sp, runtime.ToolCall{
		ID: call.ID, Name: call.Name, Arguments: call.Arguments, Update: call.Update, ArgsFirst: true,
	})
	if d, denied := res.Denial(); denied {
		l.Record(ctx, l.rec.denied, "", ToolDeniedPayload{Tool: call.Name, ReasonCode: d.ReasonCode, Capability: string(d.Capability), ClientID: l.clientID, TraceID: traceIDOf(ctx)})
	}
	return res, nil
}

// ErrNotOwner: a speaker other than the owner's tried to keep a standing
// approval.
var ErrNotOwner = errors.New("conversation: only the owner's speaker holds standing approvals")

// Question returns the pending question id, for the person at an
// interactive line (the owner in chat) to read before answering; other
// lines see none.
func (l *Line) Question(id string) (questions.Question, bool) {
	if l.svc.qs == nil || !l.sp.Interactive() {
		return questions.Question{}, false
	}
	return l.svc.qs.Get(id)
}

// Answer answers the pending question id (a free answer, or with
// declined, no answer) for the person at an interactive line; other lines
// answer nothing. It reports whether the question was still open.
func (l *Line) Answer(id, value string, declined bool) bool {
	if l.svc.qs == nil || !l.sp.Interactive() {
		return false
	}
	a := questions.Answer{Value: value}
	if declined {
		a = questions.Answer{Status: questions.StatusDeclined}
	}
	return l.svc.qs.Resolve(id, a)
}

// Approval is the owner's answer to an approval question.
type Approval struct {
	// SessionID is the session the question was asked on.
	SessionID string
	// QuestionID is the question answered.
	QuestionID string
	// Tool and Capability are what the question asked about.
	Tool, Capability string
	// Decision is DecisionAllowOnce, DecisionAllowSession or DecisionDeny.
	Decision string
}

// Approve answers an approval question as the owner: with
// [DecisionAllowSession] the tool is first allowed for the rest of the
// session, in the store (it survives a restart and answers `prompt
// --session` too; a failure to keep it is returned, and the call is still
// allowed once); then the question is resolved and the decision recorded.
// It reports whether the question was still open. Any speaker but the
// owner's gets [ErrNotOwner] and nothing happens.
func (l *Line) Approve(ctx context.Context, a Approval) (open bool, err error) {
	if !l.sp.IsOwner() {
		return false, ErrNotOwner
	}
	switch a.Decision {
	case DecisionAllowOnce, DecisionAllowSession, DecisionDeny:
	default:
		return false, fmt.Errorf("conversation: approval decision %q is not %q, %q or %q", a.Decision, DecisionAllowOnce, DecisionAllowSession, DecisionDeny)
	}
	kept := false
	if a.Decision == DecisionAllowSession {
		// Kept before the call goes on: the gate answers the next calls of
		// this tool in this session itself (StandingApprovals).
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
		err = l.svc.store.AllowForSession(actx, a.SessionID, a.Tool, tool.StoredAuthority(l.sp))
		cancel()
		kept = err == nil
		if err != nil {
			err = fmt.Errorf("keep the approval of %s for this session: %w", a.Tool, err)
		}
	}
	value := "allow"
	if a.Decision == DecisionDeny {
		value = "deny"
	}
	open = l.Answer(a.QuestionID, value, false)
	if open || kept {
		// A standing approval kept after its question ended is recorded
		// all the same.
		l.Record(ctx, sessions.AuditOwnerApproval, a.SessionID, OwnerApprovalPayload{
			SessionID: a.SessionID, Tool: a.Tool, Capability: a.Capability, Decision: a.Decision,
		})
	}
	return open, err
}
