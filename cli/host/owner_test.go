package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/sessions"
)

// TestStandingApprovalsAreTheOwners: "allow for this session" is kept in
// the store, so it survives a restart of the host (another chat, or
// prompt --session: the non-interactive owner), applies to its session
// only, is audited each time it answers, and is the owner's alone: an MCP
// client can neither record one nor have one apply to its calls.
func TestStandingApprovalsAreTheOwners(t *testing.T) {
	f := newFixture(t, []map[string]any{{"text": "unused"}})
	f.cfg.Tools.PermissionRules = nil // write asks
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
	if err := first.AllowForSession(ctx, client, s1, "bash"); !errors.Is(err, host.ErrNotOwner) {
		t.Errorf("AllowForSession as the MCP client = %v, want ErrNotOwner", err)
	}
	if err := first.AllowForSession(ctx, owner, s1, "write"); err != nil {
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
	write := func(req authz.Request, sid, path string) (ok bool, reason string) {
		args, _ := json.Marshal(map[string]string{"path": path, "content": "x"})
		res := h.Runtime().RunTool(ctx, req, runtime.ToolCall{ID: "c-" + path, Name: "write", Arguments: args, SessionID: sid})
		return !res.IsError, res.ReasonCode()
	}
	if ok, reason := write(prompt.Request, s1, "allowed.txt"); !ok {
		t.Errorf("owner's write in %s after a restart = denied (%s), want the standing approval to answer", s1, reason)
	}
	if ok, reason := write(prompt.Request, s2, "other.txt"); ok || reason != authz.ReasonApprovalUnavailable {
		t.Errorf("owner's write in %s = ok %v (%s), want APPROVAL_UNAVAILABLE: the approval is %s's", s2, ok, reason, s1)
	}
	if ok, _ := write(client.Request, s1, "client.txt"); ok {
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
	var standing []host.OwnerApprovalPayload
	for _, r := range recs {
		if r.Type != sessions.AuditOwnerApproval {
			continue
		}
		var p host.OwnerApprovalPayload
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		standing = append(standing, p)
	}
	if len(standing) != 1 || standing[0] != (host.OwnerApprovalPayload{SessionID: s1, Tool: "write", Capability: standing[0].Capability,
		Decision: host.DecisionAllowSession, Standing: true}) || standing[0].Capability == "" {
		t.Errorf("owner.approval records = %+v, want one allow_session standing for write in %s", standing, s1)
	}
}
