package claude

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/e2e/fakemodel"
	"github.com/openprogram/openprogram/cli/e2e/internal/interoptest"
)

// Install runs the real `claude mcp add`, `claude mcp list` connects, and
// `claude -p` against the fake Messages API calls all six tools.
func TestClaudeCode(t *testing.T) {
	dir := interoptest.Project(t, "claude-code")
	c := interoptest.NewClient(t)
	c.Link(t, filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-linux-x64", "claude"), "claude")
	fake := fakemodel.NewAnthropic(interoptest.FullPlan(c.DenyPath))
	defer interoptest.CloseFake(t, fake)
	env := c.Env("ANTHROPIC_BASE_URL="+fake.URL, "ANTHROPIC_API_KEY=fake-key",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1", "MCP_TIMEOUT=120000",
		// Load the MCP tools up front: with tool search the model would first
		// have to look them up.
		"ENABLE_TOOL_SEARCH=false")
	c.AddTo(t, "claude-code", env)
	claude := filepath.Join(c.Bin, "claude")
	list := c.Run(t, 3*time.Minute, env, claude, "mcp", "list")
	if !regexp.MustCompile(`(?m)^openprogram: .*Connected`).MatchString(list) {
		t.Fatalf("claude mcp list does not show openprogram connected:\n%s", list)
	}
	out := c.Run(t, 8*time.Minute, env, claude, "-p", "Use the openprogram tools as planned.",
		"--allowedTools", "mcp__openprogram", "--output-format", "text")
	if !strings.Contains(out, "interop done") {
		t.Errorf("claude -p printed %q, want the fake's final answer", out)
	}
	c.CheckFull(t, fake)
}
