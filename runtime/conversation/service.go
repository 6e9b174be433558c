package conversation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/gate"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// Agent is the agent of every session a conversation creates.
const Agent = "main"

// Errors of [Line.Send], [Line.Admit] and [Line.CallTool]. Front ends map
// them to their own answers; each says what happened, never why in the
// store's words (those go to the log).
var (
	// ErrAuditUnavailable: the request's record could not be written, so
	// nothing of it ran (audit.on_failure refuse).
	ErrAuditUnavailable = errors.New("conversation: the audit log is unavailable, so the request was refused")
	// ErrSessionNotFound: the session to continue does not exist.
	ErrSessionNotFound = errors.New("conversation: session not found")
	// ErrSessionUnavailable: the store could not create or read the
	// session.
	ErrSessionUnavailable = errors.New("conversation: the session could not be created or read")
	// ErrSessionBusy: a turn already runs on the session, on this line or
	// elsewhere (then it also wraps sessions.ErrBusy).
	ErrSessionBusy = errors.New("conversation: a turn already runs on this session")
	// ErrDuplicateRequest: a turn with the same request id runs on this
	// line.
	ErrDuplicateRequest = errors.New("conversation: a turn with this request id is running")
	// ErrClosed: the line is closed; it takes no new turn.
	ErrClosed = errors.New("conversation: the line is closed")
	// ErrCancelled: a cancel won the turn's commit point; nothing of its
	// result was written. The error of Send is a *[CancelledError].
	ErrCancelled = errors.New("conversation: the turn was cancelled")
)

// CancelledError is the error of a turn a cancel stopped at its commit
// point, and the cause the cancel gives the turn: Reason is why (one of the
// Reason constants).
type CancelledError struct{ Reason string }

func (e *CancelledError) Error() string { return "the turn was cancelled (" + e.Reason + ")" }

// Is makes a *CancelledError match [ErrCancelled].
func (e *CancelledError) Is(target error) bool { return target == ErrCancelled }

// TurnRunner runs one turn: a [runtime.Runtime], or a stand-in that keeps
// the runtime's contract (the commit point, the observer, the lease).
type TurnRunner interface {
	ProcessUserTurn(ctx context.Context, req runtime.TurnRequest) (runtime.TurnResult, error)
}

// Options configure a [Service]. Store and Runtime are required.
type Options struct {
	// Store holds the sessions, their messages and the audit log.
	Store sessions.Store
	// Runtime runs the direct tool calls ([runtime.Runtime.RunTool]) and,
	// unless Turns is set, the turns.
	Runtime *runtime.Runtime
	// Turns runs the turns instead of Runtime (nil: Runtime).
	Turns TurnRunner
	// Questions is the registry the runtime asks in (runtime.Options.
	// Questions): the owner answers there ([Line.Answer]), a cancelled
	// turn's questions are declined there, and a question of a speaker
	// nobody can ask is declined at once. Nil: there are none.
	Questions *questions.Registry
	// OnAuditFailure is what a request does when its request record cannot
	// be written. Default [AuditRefuse].
	OnAuditFailure AuditFailure
	// Logger receives diagnostics (never message text or arguments). Nil
	// discards.
	Logger *slog.Logger
	// Now is the clock of the sessions it creates. Default time.Now.
	Now func() time.Time
	// NewSessionID makes the id of a session a conversation creates from
	// its prefix ("mcp_", "cli_"). Default: the prefix and 32 random
	// lowercase hex characters.
	NewSessionID func(prefix string) string
}

// Service is a host's one conversation service: for every speaker it
// opens a [Line], over which the speaker's turns are admitted (their
// request record written before anything happens), run at their commit
// point, cancelled and audited, and its sessions created. The MCP server
// is an adapter over it, the owner's console a view of it, and a durable
// task's runner calls it directly: no front end keeps a copy.
type Service struct {
	store          sessions.Store
	rt             *runtime.Runtime
	turns          TurnRunner
	qs             *questions.Registry
	onAuditFailure AuditFailure
	log            *slog.Logger
	now            func() time.Time
	newSessionID   func(prefix string) string
}

// New checks o and returns the service, or an error naming the option to
// fix.
func New(o Options) (*Service, error) {
	switch {
	case o.Store == nil:
		return nil, errors.New("conversation: Options.Store is nil; open the session store first")
	case o.Runtime == nil:
		return nil, errors.New("conversation: Options.Runtime is nil; pass the runtime")
	case o.OnAuditFailure != AuditRefuse && o.OnAuditFailure != AuditLog:
		return nil, fmt.Errorf("conversation: Options.OnAuditFailure %d is neither AuditRefuse nor AuditLog", o.OnAuditFailure)
	}
	s := &Service{store: o.Store, rt: o.Runtime, turns: o.Turns, qs: o.Questions, onAuditFailure: o.OnAuditFailure,
		log: o.Logger, now: o.Now, newSessionID: o.NewSessionID}
	if s.turns == nil {
		s.turns = o.Runtime
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.newSessionID == nil {
		s.newSessionID = randomSessionID
	}
	return s, nil
}

// randomSessionID returns prefix and 32 random lowercase hex characters.
func randomSessionID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b[:])
}

// Store returns the session store (for the reads front ends serve
// themselves: lists, branches).
func (s *Service) Store() sessions.Store { return s.store }

// Registry returns the runtime tool registry.
func (s *Service) Registry() *tool.Registry { return s.rt.Registry() }

// Session returns session id, or an error wrapping [ErrSessionNotFound]
// or [ErrSessionUnavailable].
func (s *Service) Session(ctx context.Context, id string) (sessions.Session, error) {
	sess, err := s.store.GetSession(ctx, id)
	switch {
	case errors.Is(err, sessions.ErrNotFound):
		return sessions.Session{}, fmt.Errorf("%w: %q", ErrSessionNotFound, id)
	case err != nil:
		s.log.Warn("load session failed", "session_id", id, "error", err)
		return sessions.Session{}, fmt.Errorf("%w: %w", ErrSessionUnavailable, err)
	}
	return sess, nil
}

// LineOptions choose what a [Line] records about its speaker's requests.
type LineOptions struct {
	// Via names the owner's command ("chat", "prompt") in the record of a
	// session it creates. Ignored for other speakers.
	Via string
}

// Open returns the line of sp, a speaker authz made: one MCP connection,
// one owner console, one task runner. Close it when the front end goes.
func (s *Service) Open(sp authz.Speaker, o *LineOptions) (*Line, error) {
	if err := sp.Check(); err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	l := &Line{svc: s, sp: sp, rec: recordsOf(sp), byID: map[any]*running{}, bySession: map[string]*running{}}
	if o != nil {
		l.via = o.Via
	}
	l.clientID, _ = sp.ClientID()
	return l, nil
}

// StandingApprovals is the one answer to "does a standing approval answer
// this call" (the gate's StandingFunc for every speaker, runtime.Options.
// Standing): only for the owner's speaker, only for a tool the owner
// allowed for this session ([Line.Approve] with [DecisionAllowSession]),
// and only once its audit record (allow_session, standing) is written.
// An MCP client's calls never read them.
func StandingApprovals(store sessions.Store, log *slog.Logger) gate.StandingFunc {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, sp authz.Speaker, sessionID string, call questions.Approval) bool {
		if !sp.IsOwner() {
			return false
		}
		tools, err := store.SessionAllowances(ctx, sessionID)
		if err != nil {
			log.Warn("read the standing approvals; asking instead", "session", sessionID, "error", err)
			return false
		}
		if !slices.Contains(tools, call.Tool) {
			return false
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
		defer cancel()
		if _, err := sessions.AppendAuditPayload(actx, store, sessions.AuditOwnerApproval, sp.ID(), sessionID, OwnerApprovalPayload{
			SessionID: sessionID, Tool: call.Tool, Capability: call.Capability, Decision: DecisionAllowSession, Standing: true,
		}); err != nil {
			log.Warn("append the audit record of a standing approval; not applying it", "session", sessionID, "error", err)
			return false
		}
		return true
	}
}
