package authz_test

import (
	"testing"

	"github.com/openprogram/openprogram/authz"
)

// The paired table is pinned exactly; it MUST NOT grow.
func TestCapabilitiesPinned(t *testing.T) {
	wantOwner := []authz.Capability{
		"reply", "memory.read", "memory.source.append", "memory.trusted.promote",
		"schedule.create", "schedule.manage", "fs.read", "fs.write",
		"process.exec", "network.send", "approval.request", "runtime.control",
	}
	wantPaired := []authz.Capability{"reply", "memory.read", "memory.source.append"}
	if d := diff(authz.Capabilities(authz.TierOwner), wantOwner); d != "" {
		t.Errorf("Capabilities(owner):%s", d)
	}
	if d := diff(authz.Capabilities(authz.TierPaired), wantPaired); d != "" {
		t.Errorf("Capabilities(paired):%s", d)
	}
	if got := authz.Capabilities("admin"); got != nil {
		t.Errorf("Capabilities(admin) = %v, want nil", got)
	}
	if authz.TierOwner != "owner" || authz.TierPaired != "paired" {
		t.Errorf("tier constants = %q, %q", authz.TierOwner, authz.TierPaired)
	}
}

func TestCapabilitiesFreshSlice(t *testing.T) {
	c := authz.Capabilities(authz.TierPaired)
	c[0] = authz.CapProcessExec
	_ = append(c[:3], authz.CapFSWrite)
	if d := diff(authz.Capabilities(authz.TierPaired), []authz.Capability{"reply", "memory.read", "memory.source.append"}); d != "" {
		t.Errorf("Capabilities(paired) after mutating a returned slice:%s", d)
	}
}

func TestTierHas(t *testing.T) {
	all := authz.Capabilities(authz.TierOwner)
	paired := map[authz.Capability]bool{"reply": true, "memory.read": true, "memory.source.append": true}
	for _, c := range all {
		if !authz.TierOwner.Has(c) {
			t.Errorf("owner.Has(%q) = false, want true", c)
		}
		if got := authz.TierPaired.Has(c); got != paired[c] {
			t.Errorf("paired.Has(%q) = %v, want %v", c, got, paired[c])
		}
		if authz.Tier("").Has(c) || authz.Tier("Owner").Has(c) {
			t.Errorf("an unknown tier has %q", c)
		}
	}
	if authz.TierOwner.Has("fs.admin") {
		t.Error("owner.Has(fs.admin) = true, want false")
	}
}

// TestToolCapabilityTable checks every name of docs/contract.md section 3.
func TestToolCapabilityTable(t *testing.T) {
	want := map[string]authz.Capability{
		"memory_status": "memory.read", "memory_search": "memory.read", "memory_grep": "memory.read",
		"memory_get": "memory.read", "memory_browse": "memory.read",
		"memory_update":  "memory.source.append",
		"memory_promote": "memory.trusted.promote",
		"read":           "fs.read", "glob": "fs.read", "grep": "fs.read", "list": "fs.read",
		"write": "fs.write", "edit": "fs.write", "apply_patch": "fs.write",
		"worktree_create": "fs.write", "worktree_remove": "fs.write",
		"bash": "process.exec", "exec": "process.exec", "shell": "process.exec", "process": "process.exec",
		"execute_code": "process.exec", "agent": "process.exec",
		"web_fetch": "network.send", "web_search": "network.send", "send_message": "network.send",
		"todo_write": "runtime.control", "todo_read": "runtime.control",
		// Unclassified: process.exec (owner only).
		"": "process.exec", "frobnicate": "process.exec", "Read": "process.exec", "memory_": "process.exec",
		"worktree": "process.exec", "todo": "process.exec", "memory_status ": "process.exec",
	}
	for tool, c := range want {
		if got := authz.ToolCapability(tool); got != c {
			t.Errorf("ToolCapability(%q) = %q, want %q", tool, got, c)
		}
	}
}

func TestIsSafeTool(t *testing.T) {
	safe := []string{"read", "glob", "grep", "list", "todo_write", "todo_read", "memory_status",
		"memory_search", "memory_grep", "memory_get", "memory_browse", "memory_update"}
	unsafe := []string{"write", "edit", "apply_patch", "bash", "memory_promote", "web_fetch", "agent",
		"worktree_add", "READ", "frobnicate", "", "todo"}
	for _, s := range safe {
		if !authz.IsSafeTool(s) {
			t.Errorf("IsSafeTool(%q) = false, want true", s)
		}
	}
	for _, s := range unsafe {
		if authz.IsSafeTool(s) {
			t.Errorf("IsSafeTool(%q) = true, want false", s)
		}
	}
}

func TestIsRiskyTool(t *testing.T) {
	for _, s := range []string{"bash", "exec", "shell", "execute_code", "process", "BASH", "Shell",
		"worktree", "worktree_create", "WorkTree_x"} {
		if !authz.IsRiskyTool(s) {
			t.Errorf("IsRiskyTool(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"read", "write", "agent", "bash2", "my_bash", "worktrees", ""} {
		if authz.IsRiskyTool(s) {
			t.Errorf("IsRiskyTool(%q) = true, want false", s)
		}
	}
}

func TestToolAllowed(t *testing.T) {
	for _, tt := range []struct {
		tier     authz.Tier
		tool     string
		declared authz.Capability
		missing  authz.Capability
	}{
		{authz.TierPaired, "memory_search", authz.CapMemoryRead, ""},
		{authz.TierPaired, "memory_search", "", ""},
		{authz.TierPaired, "read", authz.CapFSRead, authz.CapFSRead},
		{authz.TierPaired, "memory_status", authz.CapProcessExec, authz.CapProcessExec}, // declared stricter than the table
		{authz.TierPaired, "custom_probe", authz.CapMemoryRead, authz.CapProcessExec},   // unclassified name
		{authz.TierOwner, "custom_probe", authz.CapMemoryRead, ""},
		{authz.TierOwner, "bash", authz.CapProcessExec, ""},
		{"admin", "memory_status", authz.CapMemoryRead, authz.CapMemoryRead},
	} {
		missing, ok := authz.ToolAllowed(tt.tier, tt.tool, tt.declared)
		if missing != tt.missing || ok != (tt.missing == "") {
			t.Errorf("ToolAllowed(%s, %s, %q) = %q, %v; want %q", tt.tier, tt.tool, tt.declared, missing, ok, tt.missing)
		}
	}
}
