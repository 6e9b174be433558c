package cli_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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

// tools list works from the configuration alone: on a fresh state
// directory (or none) it lists every tool, the memory tools included, and
// creates no database.
func TestToolsListCreatesNothing(t *testing.T) {
	env, state := fresh(t)
	if out := mustCLI(t, env, "tools", "list"); !strings.Contains(out, "memory_search") || !strings.Contains(out, "bash") {
		t.Errorf("tools list without a state directory = %q, want every tool", out)
	}
	if _, err := os.Lstat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tools list created the state directory: %v", err)
	}
	mustCLI(t, env, "mcp", "token", "create")
	before := listDir(t, state)
	if out := mustCLI(t, env, "tools", "list"); !strings.Contains(out, "memory_search") {
		t.Errorf("tools list on a fresh state directory = %q, want the memory tools", out)
	}
	if _, err := os.Lstat(filepath.Join(state, "openprogram.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tools list created openprogram.db: %v", err)
	}
	if after := listDir(t, state); !slices.Equal(before, after) {
		t.Errorf("tools list changed the state directory: %v -> %v", before, after)
	}
}
