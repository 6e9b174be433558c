package gate_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/internal/wine"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/gate"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	clientID  = "0123456789abcdef"
	principal = "owner/install/fedcba9876543210"
)

// paired is the MCP client's speaker with rules in work.
func paired(t *testing.T, rules []authz.Rule, work ...string) authz.Speaker {
	t.Helper()
	sp, err := authz.NewMCPClient(clientID, principal, authz.Scope{Rules: mustRules(t, rules), WorkDirs: work})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// owner is the owner's speaker with rules in work, interactive or not.
func owner(t *testing.T, interactive bool, rules []authz.Rule, work ...string) authz.Speaker {
	t.Helper()
	sp, err := authz.NewOwner(principal, interactive, authz.Scope{Rules: mustRules(t, rules), WorkDirs: work})
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func mustRules(t *testing.T, rules []authz.Rule) authz.Rules {
	t.Helper()
	rs, err := authz.NewRules(rules...)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// asked collects the question.asked events an observer receives.
type asked struct {
	ch chan events.Event
}

func newAsked() *asked { return &asked{ch: make(chan events.Event, 16)} }

func (a *asked) observe(e events.Event) {
	if e.Type == events.QuestionAsked {
		a.ch <- e
	}
}

// forbidden is a tool that fails the test if it is ever executed.
func forbidden(t *testing.T, name string) tool.Tool {
	return &tool.Func{
		ToolName: name, Desc: "must never run", Schema: json.RawMessage(`{"type":"object"}`),
		Cap: authz.ToolCapability(name),
		Run: func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
			t.Fatalf("tool %s executed despite a denial", name)
			return tool.Result{}, nil
		},
	}
}

type denial struct {
	name   string
	owner  bool // the non-interactive owner instead of the MCP client
	zero   bool // a speaker authz did not make
	rules  []authz.Rule
	tool   string
	args   func(work string) string
	reason string
	link   bool // needs the symlink the fixture makes
}

func TestDenialMatrixNeverExecutes(t *testing.T) {
	work := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(work, "escape")); err != nil {
		t.Fatal(err)
	}
	noArgs := func(string) string { return `{}` }
	path := func(p string) func(string) string {
		return func(w string) string {
			b, _ := json.Marshal(map[string]string{"path": p})
			return string(b)
		}
	}
	patch := func(target string) func(string) string {
		return func(string) string {
			b, _ := json.Marshal(map[string]string{"patch": "*** Begin Patch\n*** Add File: " + target + "\n+x\n*** End Patch\n"})
			return string(b)
		}
	}
	const (
		hard = authz.ReasonHardConstraint
		capa = authz.ReasonCapability
		rule = authz.ReasonRuleDeny
		appr = authz.ReasonApprovalUnavailable
	)
	cases := []denial{
		// 1. Hard constraints: risky tools, for every tier.
		{name: "bash", tool: "bash", args: func(string) string { return `{"command":"true"}` }, reason: hard},
		{name: "exec", tool: "exec", args: noArgs, reason: hard},
		{name: "shell", tool: "shell", args: noArgs, reason: hard},
		{name: "execute_code", tool: "execute_code", args: noArgs, reason: hard},
		{name: "process", tool: "process", args: noArgs, reason: hard},
		{name: "worktree_create", tool: "worktree_create", args: noArgs, reason: hard},
		// Hard constraints: writes outside the working directories.
		{name: "write outside", tool: "write", args: path(filepath.Join(outside, "x")), reason: hard},
		{name: "edit outside", tool: "edit", args: path("../x"), reason: hard},
		{name: "write through symlink", tool: "write", args: path("escape/x"), reason: hard, link: true},
		{name: "apply_patch outside", tool: "apply_patch", args: patch(filepath.Join(outside, "x")), reason: hard},
		{name: "owner write .git", owner: true, tool: "write", args: path(".git/config"), reason: hard},
		// Hard constraints: dangerous files and directories.
		{name: "write .bashrc", tool: "write", args: path(".bashrc"), reason: hard},
		{name: "edit .git/config", tool: "edit", args: path(".git/config"), reason: hard},
		{name: "apply_patch .env", tool: "apply_patch", args: patch(".env"), reason: hard},
		{name: "owner write .ssh", owner: true, tool: "write", args: path(".ssh/authorized_keys"), reason: hard},
		// 2. The paired tier lacks the capability.
		{name: "read", tool: "read", args: path("a.txt"), reason: capa},
		{name: "glob", tool: "glob", args: noArgs, reason: capa},
		{name: "grep", tool: "grep", args: noArgs, reason: capa},
		{name: "list", tool: "list", args: noArgs, reason: capa},
		{name: "write inside", tool: "write", args: path("a.txt"), reason: capa},
		{name: "edit inside", tool: "edit", args: path("a.txt"), reason: capa},
		{name: "apply_patch inside", tool: "apply_patch", args: patch("a.txt"), reason: capa},
		{name: "memory_promote", tool: "memory_promote", args: noArgs, reason: capa},
		{name: "todo_create", tool: "todo_create", args: noArgs, reason: capa},
		{name: "web_fetch", tool: "web_fetch", args: noArgs, reason: capa},
		{name: "unclassified", tool: "frobnicate", args: noArgs, reason: capa},
		{name: "speaker authz did not make", zero: true, tool: "memory_status", args: noArgs, reason: capa},
		// 3. Permission rules.
		{name: "deny rule", tool: "memory_search", rules: []authz.Rule{{Tool: "memory_search", Action: authz.ActionDeny}}, args: noArgs, reason: rule},
		{name: "deny glob rule", tool: "memory_get", rules: []authz.Rule{{Tool: "memory_*", Action: authz.ActionDeny}}, args: noArgs, reason: rule},
		{name: "deny beats allow", tool: "memory_status", rules: []authz.Rule{{Tool: "memory_status", Action: authz.ActionAllow}, {Tool: "memory_status", Action: authz.ActionDeny}}, args: noArgs, reason: rule},
		{name: "ask rule non-interactive", tool: "memory_update", rules: []authz.Rule{{Tool: "memory_update", Action: authz.ActionAsk}}, args: noArgs, reason: appr},
		// 5. Not safe, no rule: approval is unavailable for a non-interactive speaker.
		{name: "non-interactive owner write inside", owner: true, tool: "write", args: path("a.txt"), reason: appr},
		{name: "non-interactive owner memory_promote", owner: true, tool: "memory_promote", args: noArgs, reason: appr},
		{name: "non-interactive owner web_fetch", owner: true, tool: "web_fetch", args: noArgs, reason: appr},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.link && wine.Detected() {
				t.Skip("Wine makes no symlinks (its CreateSymbolicLink reports success and creates nothing); the windows-latest job runs this")
			}
			req := paired(t, c.rules, work)
			switch {
			case c.owner:
				req = owner(t, false, c.rules, work)
			case c.zero:
				req = authz.Speaker{}
			}
			// A question registry is present: a non-interactive speaker
			// must still never be asked.
			qs := questions.New(nil)
			asked := newAsked()
			g := wrap(forbidden(t, c.tool), req, &gate.Options{Questions: qs, SessionID: "s1", Observe: asked.observe})

			res := g.Execute(context.Background(), "call-1", json.RawMessage(c.args(work)), nil)
			wantCap := string(authz.ToolCapability(c.tool))
			if !res.IsError || res.Reason != c.reason || res.Details != nil {
				t.Errorf("denial IsError=%v Reason=%q Details=%v, want IsError, %q and no diagnostics\ntext: %s", res.IsError, res.Reason, res.Details, c.reason, res.Text())
			}
			if d, ok := res.Denial(); !ok || d.ReasonCode != c.reason || string(d.Capability) != wantCap || d.Message != res.Text() || res.Text() == "" {
				t.Errorf("content %q, Denial() = %+v, %v: want the decision", res.Text(), d, ok)
			}
			select {
			case e := <-asked.ch:
				t.Errorf("an approval question was asked for a non-interactive speaker: %+v", e)
			default:
			}
			if n := len(qs.Pending("s1")); n != 0 {
				t.Errorf("%d questions were registered for a non-interactive speaker", n)
			}

			// The same denial through the executor.
			var ran atomic.Bool
			inner := &tool.Func{ToolName: c.tool, Desc: "x", Schema: json.RawMessage(`{"type":"object"}`), Cap: authz.ToolCapability(c.tool),
				Run: func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
					ran.Store(true)
					return tool.Result{}, nil
				}}
			res = wrap(inner, req, nil).Execute(context.Background(), "call-2", json.RawMessage(c.args(work)), nil)
			if ran.Load() || !res.IsError || res.ReasonCode() != c.reason {
				t.Errorf("through the executor: ran=%v result=%+v, want denial %s", ran.Load(), res, c.reason)
			}
		})
	}
}

func TestDeclaredCapabilityIsAlsoChecked(t *testing.T) {
	// memory_status is memory.read in the table (paired may), but this
	// tool declares process.exec: the gate must deny.
	f := forbidden(t, "memory_status")
	f.(*tool.Func).Cap = authz.CapProcessExec
	res := wrap(f, paired(t, nil), nil).Execute(context.Background(), "c", json.RawMessage(`{}`), nil)
	if !res.IsError || res.ReasonCode() != authz.ReasonCapability || res.Denied == nil || res.Denied.Capability != authz.CapProcessExec {
		t.Errorf("Execute = %+v, want AUTHORITY_CAPABILITY_DENIED for process.exec", res)
	}
}

func recorder(name string, got *tool.CallInfo, ran *int) tool.Tool {
	return &tool.Func{ToolName: name, Desc: "records", Schema: json.RawMessage(`{"type":"object"}`), Cap: authz.ToolCapability(name),
		Run: func(ctx context.Context, _ string, _ json.RawMessage, _ func(string)) (tool.Result, error) {
			*ran++
			*got, _ = tool.CallFrom(ctx)
			return tool.TextResult("ran"), nil
		}}
}

func TestAllowedCallRunsWithCallInfo(t *testing.T) {
	work := t.TempDir()
	var info tool.CallInfo
	ran := 0
	req := paired(t, nil, work)
	g := wrap(recorder("memory_status", &info, &ran), req, &gate.Options{SessionID: "s9"})
	res := g.Execute(context.Background(), "c", json.RawMessage(`{}`), nil)
	if res.IsError || ran != 1 {
		t.Fatalf("Execute = %+v (ran %d), want it to run", res, ran)
	}
	checked := func(what, session string) {
		t.Helper()
		id, _ := info.Speaker.ClientID()
		if info.SessionID != session || id != clientID || info.Speaker.WorkDirs()[0] != work || info.Speaker.Source() != authz.SourceMCP {
			t.Errorf("%s: CallInfo = session %q, client %q, work dirs %v, source %q; want %q, the checked speaker", what, info.SessionID, id, info.Speaker.WorkDirs(), info.Speaker.Source(), session)
		}
	}
	checked("new CallInfo", "s9")
	// An existing CallInfo keeps its session but gets the checked speaker.
	ctx := tool.WithCall(context.Background(), tool.CallInfo{SessionID: "mine", Speaker: owner(t, true, nil, work)})
	g.Execute(ctx, "c", json.RawMessage(`{}`), nil)
	checked("existing CallInfo", "mine")
}

func ownerCLI(t *testing.T, work string) authz.Speaker { return owner(t, true, nil, work) }

func TestApprovalWithoutRegistryDenies(t *testing.T) {
	work := t.TempDir()
	res := wrap(forbidden(t, "write"), ownerCLI(t, work), &gate.Options{SessionID: "s"}).
		Execute(context.Background(), "c", json.RawMessage(`{"path":"a.txt"}`), nil)
	if !res.IsError || res.ReasonCode() != authz.ReasonApprovalUnavailable || res.Denied == nil {
		t.Errorf("Execute = %+v, want APPROVAL_UNAVAILABLE_NON_INTERACTIVE", res)
	}
}

func TestApprovalQuestion(t *testing.T) {
	cases := []struct {
		name    string
		answer  func(reg *questions.Registry, id string)
		wantRun bool
	}{
		{"allow", func(r *questions.Registry, id string) { r.Resolve(id, questions.Answer{Value: "allow"}) }, true},
		{"yes", func(r *questions.Registry, id string) { r.Resolve(id, questions.Answer{Value: "yes"}) }, true},
		{"deny", func(r *questions.Registry, id string) { r.Resolve(id, questions.Answer{Value: "deny"}) }, false},
		{"declined", func(r *questions.Registry, id string) { r.CancelSession("s") }, false},
		{"timeout", func(*questions.Registry, string) { time.Sleep(301 * time.Second) }, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				work := t.TempDir()
				asked := newAsked()
				reg := questions.New(nil)
				var info tool.CallInfo
				ran := 0
				g := wrap(recorder("write", &info, &ran), ownerCLI(t, work), &gate.Options{Questions: reg, SessionID: "s", Observe: asked.observe})
				var res tool.Result
				done := make(chan struct{})
				go func() {
					defer close(done)
					res = g.Execute(context.Background(), "c", json.RawMessage(`{"path":"a.txt"}`), nil)
				}()
				e := <-asked.ch
				id := e.Data.(events.QuestionData).QuestionID
				if e.Data.(events.QuestionData).Kind != "approval" || e.SessionID != "s" {
					t.Errorf("question.asked = %+v, want an approval on s", e)
				}
				if q, ok := reg.Get(id); !ok || q.Approval == nil || q.Approval.Tool != "write" {
					t.Errorf("Get(%s) = %+v, %v", id, q, ok)
				}
				c.answer(reg, id)
				<-done
				if c.wantRun {
					if res.IsError || ran != 1 {
						t.Errorf("Execute = %+v (ran %d), want the tool to run", res, ran)
					}
					return
				}
				if ran != 0 || !res.IsError || res.ReasonCode() != gate.ReasonApprovalDenied || res.Denied == nil {
					t.Errorf("Execute = %+v (ran %d), want APPROVAL_DENIED", res, ran)
				}
			})
		})
	}
}

func TestApprovalWaitIsContextAware(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		work := t.TempDir()
		reg := questions.New(nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res := wrap(forbidden(t, "write"), ownerCLI(t, work), &gate.Options{Questions: reg, SessionID: "s"}).
			Execute(ctx, "c", json.RawMessage(`{"path":"a.txt"}`), nil)
		if res.ReasonCode() != gate.ReasonApprovalDenied {
			t.Errorf("Execute = %+v, want APPROVAL_DENIED after ctx ended", res)
		}
		if n := len(reg.Pending("s")); n != 0 {
			t.Errorf("%d questions left pending", n)
		}
	})
}

func TestDenialComesBeforeArgumentValidation(t *testing.T) {
	strict := &tool.Func{ToolName: "bash", Desc: "x", Cap: authz.CapProcessExec,
		Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"],"additionalProperties":false}`),
		Run: func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
			t.Error("bash executed")
			return tool.Result{}, nil
		}}
	g := wrap(strict, paired(t, nil), nil)
	res := g.Execute(context.Background(), "c", json.RawMessage(`{"nonsense":1}`), nil)
	if res.ReasonCode() != authz.ReasonHardConstraint {
		t.Errorf("Execute(bash, invalid args) = %+v, want the hard-constraint denial first", res)
	}
	// Allowed calls still get their arguments validated.
	var info tool.CallInfo
	ran := 0
	rec := recorder("memory_status", &info, &ran).(*tool.Func)
	rec.Schema = json.RawMessage(`{"type":"object","additionalProperties":false}`)
	g = wrap(rec, paired(t, nil), nil)
	if res := g.Execute(context.Background(), "c", json.RawMessage(`{"x":1}`), nil); res.ReasonCode() != tool.ReasonInvalidArguments || ran != 0 {
		t.Errorf("allowed call with invalid args = %+v (ran %d), want INVALID_ARGUMENTS", res, ran)
	}
}

func TestApprovalWaitIsNotBoundByTheToolTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		work := t.TempDir()
		asked := newAsked()
		reg := questions.New(nil)
		var info tool.CallInfo
		ran := 0
		g := wrap(recorder("write", &info, &ran), ownerCLI(t, work), &gate.Options{Questions: reg, SessionID: "s", Observe: asked.observe})
		ex := tool.NewExecutor(&tool.ExecutorOptions{Timeout: time.Second})
		go func() {
			e := <-asked.ch
			time.Sleep(100 * time.Second)
			reg.Resolve(e.Data.(events.QuestionData).QuestionID, questions.Answer{Value: "allow"})
		}()
		res := ex.Run(context.Background(), g.t, tool.Call{ID: "c", Args: json.RawMessage(`{"path":"a.txt"}`), Guard: g.guard})
		if res.IsError || ran != 1 {
			t.Errorf("Execute after a 100s approval with a 1s tool timeout = %+v (ran %d), want it to run", res, ran)
		}
	})
}

// gated is a tool behind the gate, run the way runtime.RunTool runs it.
type gated struct {
	t     tool.Tool
	guard tool.Guard
}

func wrap(t tool.Tool, req authz.Speaker, opts *gate.Options) *gated {
	return &gated{t: t, guard: gate.Guard(t, req, opts)}
}

func (g *gated) Execute(ctx context.Context, callID string, args json.RawMessage, update func(string)) tool.Result {
	return tool.NewExecutor(nil).Run(ctx, g.t, tool.Call{ID: callID, Args: args, Update: update, Guard: g.guard})
}

// The person asked to approve a call sees what it would do: the question's
// Data holds the call's arguments as sent (never published on the bus).
func TestApprovalQuestionCarriesArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		work := t.TempDir()
		asked := newAsked()
		reg := questions.New(nil)
		g := wrap(forbidden(t, "write"), ownerCLI(t, work), &gate.Options{Questions: reg, SessionID: "s", Observe: asked.observe})
		done := make(chan struct{})
		args := `{"path":"a.txt","content":"hi"}`
		go func() {
			defer close(done)
			g.Execute(context.Background(), "c", json.RawMessage(args), nil)
		}()
		e := <-asked.ch
		id := e.Data.(events.QuestionData).QuestionID
		q, ok := reg.Get(id)
		if !ok || q.Approval == nil || q.Approval.Arguments != args || q.Approval.Tool != "write" || q.Approval.Capability != string(authz.CapFSWrite) {
			t.Errorf("Get(%s).Approval = %+v, want tool write, fs.write and arguments %s", id, q.Approval, args)
		}
		reg.Resolve(id, questions.Answer{Value: "deny"})
		<-done
	})
}

// A standing approval answers what would need an approval (asked, or
// denied for want of someone to ask) without a question, and nothing else:
// a deny rule still denies, and a false answer leaves the old path.
func TestStandingApproval(t *testing.T) {
	work := t.TempDir()
	nonInteractive := owner(t, false, nil, work)
	denyWrite := owner(t, true, []authz.Rule{{Tool: "write", Action: authz.ActionDeny}}, work)
	for _, tc := range []struct {
		name     string
		req      authz.Speaker
		standing bool
		wantRun  bool
		reason   string
	}{
		{"interactive owner, standing", ownerCLI(t, work), true, true, ""},
		{"non-interactive owner, standing", nonInteractive, true, true, ""},
		{"non-interactive owner, none", nonInteractive, false, false, authz.ReasonApprovalUnavailable},
		{"deny rule, standing", denyWrite, true, false, authz.ReasonRuleDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []questions.Approval
			standing := func(_ context.Context, sp authz.Speaker, sid string, call questions.Approval) bool {
				if sid != "s" || !sp.IsOwner() {
					t.Errorf("Standing(%s, %s) called with the wrong speaker or session", sp.ID(), sid)
				}
				asked = append(asked, call)
				return tc.standing
			}
			var info tool.CallInfo
			ran := 0
			// No question registry: a question would deny, so a run means
			// the standing approval answered.
			var told []events.Event
			observe := func(e events.Event) { told = append(told, e) }
			res := wrap(recorder("write", &info, &ran), tc.req, &gate.Options{SessionID: "s", Standing: standing, Observe: observe}).
				Execute(context.Background(), "c1", json.RawMessage(`{"path":"a.txt"}`), nil)
			// The console is told why the call ran without a question.
			wantTold := []events.Event(nil)
			if tc.wantRun {
				wantTold = []events.Event{{Type: events.StandingApproval, SessionID: "s", Data: events.StandingData{CallID: "c1", Tool: "write"}}}
			}
			for i := range told {
				told[i].Time = time.Time{}
			}
			if !reflect.DeepEqual(told, wantTold) {
				t.Errorf("events = %+v, want %+v", told, wantTold)
			}
			if (ran == 1) != tc.wantRun || res.ReasonCode() != tc.reason {
				t.Errorf("ran %d times, reason %q; want run %v, reason %q", ran, res.ReasonCode(), tc.wantRun, tc.reason)
			}
			if tc.reason == authz.ReasonRuleDeny && len(asked) != 0 {
				t.Errorf("Standing asked about a call a rule denies: %+v", asked)
			}
			if tc.reason != authz.ReasonRuleDeny && (len(asked) != 1 || asked[0].Tool != "write" || asked[0].CallID != "c1") {
				t.Errorf("Standing asked %+v, want the write call c1 once", asked)
			}
		})
	}
}
