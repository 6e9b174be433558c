package cli_test

import (
	"strings"
	"testing"
)

// tools list explains the allowlist with the same resolution tools_list uses.
func TestToolsListExplainsExposure(t *testing.T) {
	env, _ := fresh(t)
	mustCLI(t, env, "mcp", "token", "create")
	mustCLI(t, env, "config", "set", "mcp_server.exposed_tools", `["bash","memory_search","nope","memory_search"]`)

	r := runCLI(t, env, "tools", "list", "--exposed")
	if r.code != 0 {
		t.Fatalf("tools list --exposed: exit %d, stderr %q", r.code, r.stderr)
	}
	if got, want := strings.Fields(r.stdout), []string{"NAME", "CAPABILITY", "memory_search", "memory.read"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("tools list --exposed stdout = %q, want only memory_search", r.stdout)
	}
	for _, want := range []string{
		"note: bash is in mcp_server.exposed_tools but hidden from MCP clients: needs process.exec",
		"note: nope is in mcp_server.exposed_tools but hidden from MCP clients: not a registered runtime tool",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr = %q, want it to contain %q", r.stderr, want)
		}
	}

	all := mustCLI(t, env, "tools", "list")
	for _, want := range []string{"memory_search   memory.read             exposed", "listed, but hidden: needs process.exec", "memory_update"} {
		if !strings.Contains(all, want) {
			t.Errorf("tools list = %q, want it to contain %q", all, want)
		}
	}
}
