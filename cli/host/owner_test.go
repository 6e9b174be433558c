package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/sessions"
)

// TestStandingApprovalsAreTheOwners: "allow for this session" is kept in
// the store, so it survives a restart of the host (another chat, or
// prompt --session: the non-interactive owner), applies to its session
// only, is audited each time it answers, and is the owner's alone: an MCP
// client can neither record one nor have one apply to its calls.
func TestStandingApprovalsAreTheOwners(t *testing.T) {
	f := newFixture(t, []map[string]any{{"text": "unused"}})
	f.cfg.Tools.PermissionRules = authz.Rules{} // write asks
	ctx := context.Background()
	const s1, s2 = "cli_11111111111111111111111111111111", "cli_22222222222222222222222222222222"

	first, err := host.Open(ctx, f.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := first.Owner(host.OwnerOptions{Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	client, err := first.MCPClient("0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{s1, s2} {
		if _, err := first.Store().CreateSession(ctx, sessions.Session{ID: id, AgentID: "main", Source: authz.SourceCLI}); err != nil {
			t.Fatal(err)
		}
	}
	clientLine, err := first.Conversations().Open(client, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clientLine.Approve(ctx, conversation.Approval{SessionID: s1, Tool: "bash", Decision: conversation.DecisionAllowSession}); !errors.Is(err, conversation.ErrNotOwner) {
		t.Errorf("Approve as the MCP client = %v, want ErrNotOwner", err)
	}
	ownerLine, err := first.Conversations().Open(owner, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The owner allows write for the rest of s1 (the question itself is
	// gone: the approval is kept all the same, and recorded).
	if _, err := ownerLine.Approve(ctx, conversation.Approval{SessionID: s1, QuestionID: "gone", Tool: "write", Capability: "fs.write", Decision: conversation.DecisionAllowSession}); err != nil {
		t.Fatal(err)
	}
	first.Close()

	// A new host on the same state directory: the owner without a
	// terminal (prompt --session).
	h := f.open(t)
	prompt, err := h.Owner(host.OwnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client, err = h.MCPClient("0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	write := func(sp authz.Speaker, sid, path string) (ok bool, reason string) {
		args, _ := json.Marshal(map[string]string{"path": path, "content": "x"})
		res := h.Runtime().RunTool(ctx, sp, runtime.ToolCall{ID: "c-" + path, Name: "write", Arguments: args, SessionID: sid})
		return !res.IsError, res.ReasonCode()
	}
	if ok, reason := write(prompt, s1, "allowed.txt"); !ok {
		t.Errorf("owner's write in %s after a restart = denied (%s), want the standing approval to answer", s1, reason)
	}
	if ok, reason := write(prompt, s2, "other.txt"); ok || reason != authz.ReasonApprovalUnavailable {
		t.Errorf("owner's write in %s = ok %v (%s), want APPROVAL_UNAVAILABLE: the approval is %s's", s2, ok, reason, s1)
	}
	if ok, _ := write(client, s1, "client.txt"); ok {
		t.Error("the MCP client's write in the owner's session was allowed")
	}
	for name, want := range map[string]bool{"allowed.txt": true, "other.txt": false, "client.txt": false} {
		if _, err := os.Stat(filepath.Join(f.work, name)); (err == nil) != want {
			t.Errorf("%s written = %v, want %v", name, err == nil, want)
		}
	}

	recs, err := h.Store().TailAudit(ctx, 50)
	if err != nil {
		t.Fatal(err)
	}
	var approvals []conversation.OwnerApprovalPayload
	for _, r := range recs {
		if r.Type != sessions.AuditOwnerApproval {
			continue
		}
		var p conversation.OwnerApprovalPayload
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		approvals = append(approvals, p)
	}
	want := []conversation.OwnerApprovalPayload{
		{SessionID: s1, Tool: "write", Capability: "fs.write", Decision: conversation.DecisionAllowSession},
		{SessionID: s1, Tool: "write", Capability: "fs.write", Decision: conversation.DecisionAllowSession, Standing: true},
	}
	if !reflect.DeepEqual(approvals, want) {
		t.Errorf("owner.approval records = %+v, want the owner's allow_session for write in %s, then the standing one that answered", approvals, s1)
	}
}
