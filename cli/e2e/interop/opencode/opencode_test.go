package opencode

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/e2e/fakemodel"
	"github.com/openprogram/openprogram/cli/e2e/internal/interoptest"
)

// Install merges the mcp entry into an opencode.json that already names a
// provider (the fake Chat Completions API), `opencode mcp list` connects,
// and `opencode run` calls prompt_send.
func TestOpencode(t *testing.T) {
	dir := interoptest.Project(t, "opencode")
	c := interoptest.NewClient(t)
	c.Link(t, filepath.Join(dir, "node_modules", "opencode-linux-x64", "bin", "opencode"), "opencode")
	fake := fakemodel.NewChatCompletions(interoptest.PromptPlan)
	defer interoptest.CloseFake(t, fake)
	cfgDir := filepath.Join(c.UserHome, ".config", "opencode")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := `{
  "$schema": "https://opencode.ai/config.json",
  "model": "fake/fake",
  "provider": {
    "fake": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Fake",
      "options": {"baseURL": "` + fake.URL + `/v1", "apiKey": "fake-key"},
      "models": {"fake": {"name": "Fake", "tool_call": true}}
    }
  }
}
`
	if err := os.WriteFile(filepath.Join(cfgDir, "opencode.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := c.Env("OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_CLAUDE_CODE=1")
	c.AddTo(t, "opencode", env)
	opencode := filepath.Join(c.Bin, "opencode")
	list := c.Run(t, 3*time.Minute, env, opencode, "mcp", "list")
	if !regexp.MustCompile(`(?m)✓ openprogram connected$`).MatchString(interoptest.Plain(list)) {
		t.Fatalf("opencode mcp list does not show openprogram connected:\n%s", list)
	}
	out := c.Run(t, 8*time.Minute, env, opencode, "run", "--model", "fake/fake", "Use the openprogram tools as planned.")
	if !strings.Contains(out, "interop done") {
		t.Errorf("opencode run printed %q, want the fake's final answer", out)
	}
	c.CheckPrompt(t, fake)
}
