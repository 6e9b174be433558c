package authz_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openprogram/openprogram/authz"
)

func ExampleDecide() {
	client, err := authz.NewMCPClient("fedcba9876543210", "owner/install/0123456789abcdef",
		authz.Scope{WorkDirs: []string{filepath.Join(os.TempDir(), "project")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, call := range []struct {
		tool string
		args string
	}{
		{"bash", `{"command":"ls"}`},
		{"read", `{"path":"README.md"}`},
		{"memory_search", `{"query":"deploy"}`},
	} {
		d := authz.Decide(client, call.tool, json.RawMessage(call.args))
		fmt.Printf("%s: allowed=%v %s %q\n", call.tool, d.Allowed, d.ReasonCode, d.Message)
	}
	// Output:
	// bash: allowed=false HARD_CONSTRAINT_DENIED "hard constraint: bash is not allowed for source mcp"
	// read: allowed=false AUTHORITY_CAPABILITY_DENIED "authority tier paired does not allow fs.read"
	// memory_search: allowed=true  "allowed: memory_search is a safe tool"
}

func ExampleNewMCPClient() {
	sp, err := authz.NewMCPClient("fedcba9876543210", "owner/install/0123456789abcdef", authz.Scope{})
	a := sp.Authority()
	fmt.Println(a.SpeakerKind, a.SpeakerID, a.Tier, a.Interaction, sp.Source(), err)
	_, err = authz.NewMCPClient("", "owner/install/0123456789abcdef", authz.Scope{})
	fmt.Println(err != nil)
	var zero authz.Speaker
	fmt.Println(zero.Valid(), authz.Decide(zero, "memory_search", nil).Allowed)
	// Output:
	// client mcp/fedcba9876543210 paired non-interactive mcp <nil>
	// true
	// false false
}

func ExampleParseRules() {
	_, err := authz.ParseRules(json.RawMessage(`[{"tool":"bash(git status:*)","action":"allow"},{"tool":"read(","action":"deny"}]`))
	fmt.Println(err)
	// Output:
	// tools.permission_rules[1]: invalid permission rule {tool: read(, action: deny}: tool with a pattern must look like name(pattern)
}

func ExamplePatchTargets() {
	targets, err := authz.PatchTargets("*** Begin Patch\n*** Update File: a.go\n*** Move to: b.go\n*** Delete File: c.go\n*** End Patch\n")
	fmt.Println(targets, err)
	// Output:
	// [a.go b.go c.go] <nil>
}
