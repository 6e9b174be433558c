package authz_test

import (
	"errors"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

// TestZeroSpeakerHoldsNothing: a Speaker that no constructor made is refused
// everywhere it is used, whatever the tool: the gate allows nothing and no
// write target resolves.
func TestZeroSpeakerHoldsNothing(t *testing.T) {
	var zero authz.Speaker
	if zero.Valid() || zero.IsOwner() || zero.Interactive() {
		t.Fatalf("zero speaker: Valid=%v IsOwner=%v Interactive=%v, want all false", zero.Valid(), zero.IsOwner(), zero.Interactive())
	}
	if err := zero.Check(); !errors.Is(err, authz.ErrInvalidSpeaker) {
		t.Errorf("zero.Check() = %v, want ErrInvalidSpeaker", err)
	}
	if _, ok := zero.ClientID(); ok {
		t.Errorf("zero.ClientID() reports a client")
	}
	for _, tool := range []string{"memory_search", "read", "todo_write", "reply"} {
		if d := authz.Decide(zero, tool, nil); d.Allowed || d.NeedsApproval || d.ReasonCode != authz.ReasonCapability {
			t.Errorf("Decide(zero, %q) = %+v, want a capability denial", tool, d)
		}
	}
	if _, err := zero.WriteTarget("write", "a.txt"); err == nil {
		t.Errorf("zero.WriteTarget succeeded")
	}
}

func TestNewMCPClient(t *testing.T) {
	dir := t.TempDir()
	rules, err := authz.NewRules(authz.Rule{Tool: "memory_*", Action: authz.ActionAllow})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := authz.NewMCPClient(clientID, principal, authz.Scope{Rules: rules, WorkDirs: []string{dir}, StateDir: dir + "/state"})
	if err != nil {
		t.Fatalf("NewMCPClient: %v", err)
	}
	a := sp.Authority()
	if a.SpeakerKind != authz.SpeakerKindClient || a.SpeakerID != "mcp/"+clientID || a.Tier != authz.TierPaired ||
		a.Interaction != authz.InteractionNonInteractive || a.PrincipalID != principal {
		t.Errorf("authority = %+v", a)
	}
	if id, ok := sp.ClientID(); !ok || id != clientID {
		t.Errorf("ClientID() = %q, %v", id, ok)
	}
	if sp.Source() != authz.SourceMCP || sp.Mode() != authz.ModeAsk || sp.IsOwner() || sp.Interactive() || sp.ID() != "mcp/"+clientID {
		t.Errorf("source %q mode %q owner %v interactive %v id %q", sp.Source(), sp.Mode(), sp.IsOwner(), sp.Interactive(), sp.ID())
	}
	if sp.Rules().Len() != 1 || sp.StateDir() != dir+"/state" {
		t.Errorf("rules %d, state dir %q", sp.Rules().Len(), sp.StateDir())
	}
	// The working directories are the speaker's own: changing the caller's
	// slice, or the returned copy, changes nothing.
	dirs := sp.WorkDirs()
	dirs[0] = "/"
	if sp.WorkDirs()[0] != dir {
		t.Errorf("WorkDirs shares its slice")
	}

	for _, c := range []struct {
		name, client, principal string
		at                      authz.Scope
	}{
		{"empty client", "", principal, authz.Scope{}},
		{"upper-case client", "FEDCBA9876543210", principal, authz.Scope{}},
		{"bad principal", clientID, "owner/x", authz.Scope{}},
		{"relative work dir", clientID, principal, authz.Scope{WorkDirs: []string{"rel"}}},
		{"relative state dir", clientID, principal, authz.Scope{StateDir: "state"}},
		{"NUL in work dir", clientID, principal, authz.Scope{WorkDirs: []string{"/a\x00b"}}},
	} {
		if sp, err := authz.NewMCPClient(c.client, c.principal, c.at); err == nil || sp.Valid() {
			t.Errorf("%s: NewMCPClient succeeded", c.name)
		}
	}
}

func TestNewOwner(t *testing.T) {
	for _, interactive := range []bool{true, false} {
		sp, err := authz.NewOwner(principal, interactive, authz.Scope{WorkDirs: []string{t.TempDir()}})
		if err != nil {
			t.Fatalf("NewOwner(%v): %v", interactive, err)
		}
		if !sp.IsOwner() || sp.Source() != authz.SourceCLI || sp.Authority().Tier != authz.TierOwner || sp.Interactive() != interactive {
			t.Errorf("NewOwner(%v): owner %v source %q tier %q interactive %v", interactive, sp.IsOwner(), sp.Source(), sp.Authority().Tier, sp.Interactive())
		}
		if _, ok := sp.ClientID(); ok {
			t.Errorf("the owner has a client id")
		}
	}
	if _, err := authz.NewOwner("", true, authz.Scope{}); !errors.Is(err, authz.ErrInvalidAuthority) {
		t.Errorf("NewOwner without a principal: %v, want ErrInvalidAuthority", err)
	}
}

// TestNewRules: rules are checked once, when made; a malformed one names
// itself, and nothing is kept.
func TestNewRules(t *testing.T) {
	rs, err := authz.NewRules(authz.Rule{Tool: "bash(git status:*)", Action: authz.ActionAllow}, authz.Rule{Tool: "read(", Action: authz.ActionDeny})
	if !errors.Is(err, authz.ErrInvalidRule) || rs.Len() != 0 {
		t.Fatalf("NewRules with a malformed rule = %v, %v", rs.List(), err)
	}
	mustContain(t, "NewRules error", err.Error(), "read(")
	if rs, err := authz.NewRules(); err != nil || rs.Len() != 0 {
		t.Errorf("NewRules() = %v, %v", rs.List(), err)
	}
	b, err := authz.Rules{}.MarshalJSON()
	if err != nil || string(b) != "[]" {
		t.Errorf("zero Rules MarshalJSON = %s, %v; want []", b, err)
	}
}

// Every constructor error is an ErrInvalidSpeaker; a bad id is also an
// ErrInvalidAuthority.
func TestConstructorErrors(t *testing.T) {
	_, err := authz.NewMCPClient("nope", principal, authz.Scope{})
	if !errors.Is(err, authz.ErrInvalidSpeaker) || !errors.Is(err, authz.ErrInvalidAuthority) {
		t.Errorf("NewMCPClient(bad id) = %v, want ErrInvalidSpeaker and ErrInvalidAuthority", err)
	}
	_, err = authz.NewOwner(principal, true, authz.Scope{WorkDirs: []string{"rel"}})
	if !errors.Is(err, authz.ErrInvalidSpeaker) || errors.Is(err, authz.ErrInvalidAuthority) {
		t.Errorf("NewOwner(relative work dir) = %v, want ErrInvalidSpeaker only", err)
	}
	a, _ := authz.NewRules(authz.Rule{Tool: "x", Action: authz.ActionAllow})
	b, _ := authz.NewRules(authz.Rule{Tool: "x", Action: authz.ActionAllow})
	c, _ := authz.NewRules(authz.Rule{Tool: "x", Action: authz.ActionDeny})
	if !a.Equal(b) || a.Equal(c) || a.Equal(authz.Rules{}) {
		t.Errorf("Rules.Equal: same %v, different %v, empty %v", a.Equal(b), a.Equal(c), a.Equal(authz.Rules{}))
	}
}
