package authz_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/openprogram/openprogram/authz"
)

const (
	principal = "owner/install/0123456789abcdef"
	clientID  = "fedcba9876543210"
)

func TestMCPClientAuthority(t *testing.T) {
	got, err := authz.MCPClientAuthority(clientID, principal)
	if err != nil {
		t.Fatalf("MCPClientAuthority: %v", err)
	}
	want := authz.Authority{
		SpeakerKind: "client", SpeakerID: "mcp/fedcba9876543210", SpeakerDisplay: "MCP client",
		PrincipalID: principal, Tier: "paired", Interaction: "non-interactive",
	}
	if d := diff(got, want); d != "" {
		t.Errorf("MCPClientAuthority:%s", d)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"speaker_kind":"client","speaker_id":"mcp/fedcba9876543210","speaker_display":"MCP client","principal_id":"owner/install/0123456789abcdef","authority_tier":"paired","interaction":"non-interactive"}`
	if string(b) != wantJSON {
		t.Errorf("json = %s, want %s", b, wantJSON)
	}
}

func TestMCPClientAuthorityRejects(t *testing.T) {
	cases := []struct{ client, principal string }{
		{"", principal},
		{"fedcba987654321", principal},   // 15
		{"fedcba98765432100", principal}, // 17
		{"FEDCBA9876543210", principal},  // upper case
		{"fedcba987654321g", principal},
		{" fedcba987654321", principal},
		{"mcp/fedcba98765432", principal},
		{clientID, ""},
		{clientID, "owner/install/"},
		{clientID, "owner/install/0123456789ABCDEF"},
		{clientID, "owner/install/0123456789abcde"},
		{clientID, "owner/install/0123456789abcdef0"},
		{clientID, "owner/other/0123456789abcdef"},
		{clientID, "owner/install/0123456789abcdef\n"},
	}
	for _, c := range cases {
		got, err := authz.MCPClientAuthority(c.client, c.principal)
		if err == nil || !errors.Is(err, authz.ErrInvalidAuthority) {
			t.Errorf("MCPClientAuthority(%q, %q) error = %v, want ErrInvalidAuthority", c.client, c.principal, err)
		}
		if got != (authz.Authority{}) {
			t.Errorf("MCPClientAuthority(%q, %q) = %+v, want zero", c.client, c.principal, got)
		}
	}
}

func TestOwnerAuthority(t *testing.T) {
	got, err := authz.OwnerAuthority(principal)
	if err != nil {
		t.Fatal(err)
	}
	want := authz.Authority{SpeakerKind: "owner", SpeakerID: "owner", SpeakerDisplay: "Owner",
		PrincipalID: principal, Tier: "owner", Interaction: "interactive"}
	if d := diff(got, want); d != "" {
		t.Errorf("OwnerAuthority:%s", d)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if _, err := authz.OwnerAuthority("owner/install/xyz"); !errors.Is(err, authz.ErrInvalidAuthority) {
		t.Errorf("OwnerAuthority(bad) error = %v, want ErrInvalidAuthority", err)
	}
}

func TestAuthorityValidate(t *testing.T) {
	client, _ := authz.MCPClientAuthority(clientID, principal)
	owner, _ := authz.OwnerAuthority(principal)
	agent := authz.Authority{SpeakerKind: "agent", SpeakerID: "agent/sub-1", SpeakerDisplay: "Sub agent",
		PrincipalID: principal, Tier: authz.TierOwner, Interaction: authz.InteractionNonInteractive}
	ownerNI := owner
	ownerNI.Interaction = authz.InteractionNonInteractive
	for name, a := range map[string]authz.Authority{"client": client, "owner": owner, "agent": agent, "owner non-interactive": ownerNI} {
		if err := a.Validate(); err != nil {
			t.Errorf("%s: Validate() = %v, want nil", name, err)
		}
	}
	bad := map[string]func(a *authz.Authority){
		"client as owner tier":       func(a *authz.Authority) { *a = client; a.Tier = authz.TierOwner },
		"client interactive":         func(a *authz.Authority) { *a = client; a.Interaction = authz.InteractionInteractive },
		"client other display":       func(a *authz.Authority) { *a = client; a.SpeakerDisplay = "Owner" },
		"client bad speaker id":      func(a *authz.Authority) { *a = client; a.SpeakerID = "mcp/xyz" },
		"client speaker id no mcp":   func(a *authz.Authority) { *a = client; a.SpeakerID = "fedcba9876543210" },
		"owner paired tier":          func(a *authz.Authority) { *a = owner; a.Tier = authz.TierPaired },
		"owner other id":             func(a *authz.Authority) { *a = owner; a.SpeakerID = "mcp/fedcba9876543210" },
		"zero":                       func(a *authz.Authority) { *a = authz.Authority{} },
		"empty kind":                 func(a *authz.Authority) { *a = agent; a.SpeakerKind = "" },
		"upper kind":                 func(a *authz.Authority) { *a = agent; a.SpeakerKind = "Owner" },
		"empty speaker id":           func(a *authz.Authority) { *a = agent; a.SpeakerID = "" },
		"control char in display":    func(a *authz.Authority) { *a = agent; a.SpeakerDisplay = "x\x1b[31m" },
		"long display":               func(a *authz.Authority) { *a = agent; a.SpeakerDisplay = string(make([]byte, 300)) },
		"bad principal":              func(a *authz.Authority) { *a = agent; a.PrincipalID = "owner/install/1" },
		"unknown tier":               func(a *authz.Authority) { *a = agent; a.Tier = "root" },
		"empty interaction":          func(a *authz.Authority) { *a = agent; a.Interaction = "" },
		"unknown interaction":        func(a *authz.Authority) { *a = agent; a.Interaction = "maybe" },
		"invalid utf8 in speaker id": func(a *authz.Authority) { *a = agent; a.SpeakerID = "a\xffb" },
	}
	for name, mutate := range bad {
		var a authz.Authority
		mutate(&a)
		if err := a.Validate(); !errors.Is(err, authz.ErrInvalidAuthority) {
			t.Errorf("%s: Validate() = %v, want ErrInvalidAuthority", name, err)
		}
	}
}

// TestAuthorityIsOwner: a stored authority is the owner's only with both
// the owner's kind and the owner's tier; the speaker's IsOwner and the
// history's envelope ask the same rule.
func TestAuthorityIsOwner(t *testing.T) {
	for _, c := range []struct {
		name string
		a    authz.Authority
		want bool
	}{
		{"owner", authz.Authority{SpeakerKind: authz.SpeakerKindOwner, Tier: authz.TierOwner}, true},
		{"owner kind, paired tier", authz.Authority{SpeakerKind: authz.SpeakerKindOwner, Tier: authz.TierPaired}, false},
		{"client kind, owner tier", authz.Authority{SpeakerKind: authz.SpeakerKindClient, Tier: authz.TierOwner}, false},
		{"zero", authz.Authority{}, false},
	} {
		if got := c.a.IsOwner(); got != c.want {
			t.Errorf("%s: IsOwner = %v, want %v", c.name, got, c.want)
		}
	}
}
