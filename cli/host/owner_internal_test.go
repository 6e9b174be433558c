package host

import (
	"context"
	"log/slog"
	"testing"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/sessions"
)

// allowanceSpy is a store that fails the test when the standing approvals
// are read or written.
type allowanceSpy struct {
	sessions.Store
	t *testing.T
}

func (s allowanceSpy) SessionAllowances(context.Context, string) ([]string, error) {
	s.t.Error("SessionAllowances read for a speaker that is not the owner")
	return []string{"write"}, nil
}

func (s allowanceSpy) AllowForSession(context.Context, string, string, sessions.SourceAuthority) error {
	s.t.Error("AllowForSession written for a speaker that is not the owner")
	return nil
}

// The MCP client's speaker never reads or writes standing approvals, and
// neither does a request that only claims the owner's source or tier.
func TestStandingApprovalsNeverReadForOthers(t *testing.T) {
	const principal = "owner/install/fedcba9876543210"
	h := &Host{store: allowanceSpy{t: t}, log: slog.New(slog.DiscardHandler)}
	client, err := authz.MCPClientAuthority("0123456789abcdef", principal)
	if err != nil {
		t.Fatal(err)
	}
	owner, err := authz.OwnerAuthority(principal)
	if err != nil {
		t.Fatal(err)
	}
	forged := owner
	forged.SpeakerID = "mcp/0123456789abcdef"
	call := questions.Approval{Tool: "write", Capability: "fs.write", CallID: "c"}
	for name, req := range map[string]authz.Request{
		"mcp client":                {Source: authz.SourceMCP, Authority: client},
		"owner authority over mcp":  {Source: authz.SourceMCP, Authority: owner},
		"client authority over cli": {Source: authz.SourceCLI, Authority: client},
		"invalid owner authority":   {Source: authz.SourceCLI, Authority: forged},
	} {
		if h.standing(context.Background(), req, "s1", call) {
			t.Errorf("%s: a standing approval answered", name)
		}
		if err := h.AllowForSession(context.Background(), Speaker{Request: req}, "s1", "write"); err != ErrNotOwner {
			t.Errorf("%s: AllowForSession = %v, want ErrNotOwner", name, err)
		}
	}
}
