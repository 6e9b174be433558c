package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
)

// ReasonApprovalDenied is the reason code when an approval question was
// declined, timed out, cancelled or answered with anything but allow.
const ReasonApprovalDenied = "APPROVAL_DENIED"

// Options configure [Guard]. The zero value of each field means "none".
type Options struct {
	// Questions asks the owner when a decision needs approval. Without it
	// such calls are denied (APPROVAL_UNAVAILABLE_NON_INTERACTIVE).
	Questions *questions.Registry
	// SessionID is the session approval questions are raised on, and the
	// CallInfo session when the context carries none.
	SessionID string
	// ApprovalTimeout bounds an approval question (0: the registry default).
	ApprovalTimeout time.Duration
	// Standing answers whether a standing approval covers a call (nil:
	// none does). See [StandingFunc].
	Standing StandingFunc
	// Observe receives question.asked when an approval question is raised
	// (before the gate waits for its answer) and approval.standing when a
	// standing approval allows a call (nil: nobody is told).
	Observe events.Observer
}

// StandingFunc reports whether a standing approval ("allow for this
// session") answers call for speaker sp in session sessionID. The gate asks it
// only for a call that lacks nothing but the speaker's approval: one
// [authz.DecideTool] would ask about ([authz.Decision.NeedsApproval]) or
// deny because nobody can be asked ([authz.ReasonApprovalUnavailable]).
// Its true answer allows that call without a question; nothing a rule, a
// hard constraint or the tier denies is ever asked about. It decides which
// speakers may hold standing approvals (the owner's), writes the
// decision's audit record, and answers false when it cannot; the gate then
// reports approval.standing to Options.Observe.
type StandingFunc func(ctx context.Context, sp authz.Speaker, sessionID string, call questions.Approval) bool

// Guard returns the guard that runs [authz.Decide] for sp before every
// call of t, to set as [tool.Call.Guard] for [tool.Executor.Run]: t never
// runs on a denial, which is an IsError result whose text is the
// decision's message, with the decision in [tool.Result.Denied] and its
// reason code in [tool.Result.Reason]. Beyond Decide it also denies a tool whose
// declared capability the tier lacks, and asks an approval question when
// the decision needs one and opts.Questions is set.
//
// The call's context gets a [tool.CallInfo] with sp, whole (always: the
// tool acts under exactly what was checked), and opts.SessionID when the
// context carries no session.
func Guard(t tool.Tool, sp authz.Speaker, opts *Options) tool.Guard {
	g := &gated{inner: t, sp: sp}
	if opts != nil {
		g.opts = *opts
	}
	return g.check
}

type gated struct {
	inner tool.Tool
	sp    authz.Speaker
	opts  Options
}

// check is the tool.Guard: the decision, an approval question when one is
// needed, and the CallInfo the tool runs with.
func (g *gated) check(ctx context.Context, callID string, args json.RawMessage) (context.Context, tool.Result, bool) {
	name := g.inner.Name()
	d := authz.DecideTool(g.sp, name, g.inner.Capability(), args)
	switch {
	case (d.NeedsApproval || d.ReasonCode == authz.ReasonApprovalUnavailable) && g.standing(ctx, callID, args, d):
		d = authz.Decision{Allowed: true, Capability: d.Capability, Message: fmt.Sprintf("allowed: a standing approval covers %s in this session", name)}
		g.opts.Observe.Emit(events.StandingApproval, g.sessionID(ctx), events.StandingData{
			CallID: clip.String(callID, events.MaxCallIDLen), Tool: clip.String(name, events.MaxToolLen),
		})
	case d.NeedsApproval:
		d = g.approve(ctx, callID, args, d)
	}
	if !d.Allowed {
		return nil, tool.DeniedResult(d), false
	}
	return g.withCall(ctx), tool.Result{}, true
}

// standing asks Options.Standing whether a standing approval answers the
// call.
func (g *gated) standing(ctx context.Context, callID string, args json.RawMessage, d authz.Decision) bool {
	sid := g.sessionID(ctx)
	if g.opts.Standing == nil || sid == "" {
		return false
	}
	return g.opts.Standing(ctx, g.sp, sid, questions.Approval{
		Tool: g.inner.Name(), Capability: string(d.Capability), CallID: callID, Arguments: string(args),
	})
}

// approve turns a NeedsApproval decision into an allowed or denied one.
func (g *gated) approve(ctx context.Context, callID string, args json.RawMessage, d authz.Decision) authz.Decision {
	name := g.inner.Name()
	if g.opts.Questions == nil || g.sessionID(ctx) == "" {
		return authz.Decision{
			ReasonCode: authz.ReasonApprovalUnavailable,
			Capability: d.Capability,
			Message:    fmt.Sprintf("approval unavailable: %s, and no one can be asked", d.Message),
		}
	}
	p, err := g.opts.Questions.Register(questions.Question{
		SessionID: g.sessionID(ctx),
		Kind:      questions.KindApproval,
		Prompt:    fmt.Sprintf("Allow tool %s (%s)? %s", name, d.Capability, d.Message),
		Options:   []string{"allow", "deny"},
		Timeout:   g.opts.ApprovalTimeout,
		Approval:  &questions.Approval{Tool: name, Capability: string(d.Capability), CallID: callID, Arguments: string(args)},
	})
	if err != nil {
		return authz.Decision{ReasonCode: ReasonApprovalDenied, Capability: d.Capability, Message: fmt.Sprintf("approval for %s could not be asked: %v", name, err)}
	}
	q := p.Question()
	g.opts.Observe.Emit(events.QuestionAsked, q.SessionID, events.QuestionData{QuestionID: q.ID, Kind: string(q.Kind), SessionID: q.SessionID})
	ans := p.Wait(ctx)
	if ans.Approved() {
		return authz.Decision{Allowed: true, Capability: d.Capability, Message: fmt.Sprintf("allowed: approval for %s was granted", name)}
	}
	why := string(ans.Status)
	if ans.Status == questions.StatusAnswered {
		why = "refused"
	}
	return authz.Decision{ReasonCode: ReasonApprovalDenied, Capability: d.Capability, Message: fmt.Sprintf("approval for %s was not granted (%s)", name, why)}
}

func (g *gated) sessionID(ctx context.Context) string {
	if info, ok := tool.CallFrom(ctx); ok && info.SessionID != "" {
		return info.SessionID
	}
	return g.opts.SessionID
}

func (g *gated) withCall(ctx context.Context) context.Context {
	info, _ := tool.CallFrom(ctx)
	info.Speaker = g.sp
	if info.SessionID == "" {
		info.SessionID = g.opts.SessionID
	}
	return tool.WithCall(ctx, info)
}
