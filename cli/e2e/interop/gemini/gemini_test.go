package gemini

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/e2e/fakemodel"
	"github.com/openprogram/openprogram/cli/e2e/internal/interoptest"
)

// Install writes settings.json with the token named in env, `gemini mcp
// list` connects, and `gemini -p` calls prompt_send.
func TestGeminiCLI(t *testing.T) {
	dir := interoptest.Project(t, "gemini")
	c := interoptest.NewClient(t)
	fake := fakemodel.NewGemini(interoptest.PromptPlan)
	defer interoptest.CloseFake(t, fake)
	env := c.Env("GOOGLE_GEMINI_BASE_URL="+fake.URL, "GEMINI_API_KEY=fake-key", "GEMINI_CLI_NO_RELAUNCH=true")
	// The API key method (pointed at the fake by GOOGLE_GEMINI_BASE_URL);
	// install keeps this setting.
	settings := filepath.Join(c.UserHome, ".gemini", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"security": {"auth": {"selectedType": "gemini-api-key"}}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.AddTo(t, "gemini", env)
	// Gemini CLI starts no server in a folder the user has not trusted.
	trust, err := json.Marshal(map[string]string{c.UserHome: "TRUST_FOLDER"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.UserHome, ".gemini", "trustedFolders.json"), trust, 0o600); err != nil {
		t.Fatal(err)
	}
	gemini := filepath.Join(dir, "node_modules", "@google", "gemini-cli", "bundle", "gemini.js")
	list := c.Run(t, 3*time.Minute, env, "node", gemini, "mcp", "list")
	if !regexp.MustCompile(`(?m)^✓ openprogram: .* - Connected$`).MatchString(interoptest.Plain(list)) {
		t.Fatalf("gemini mcp list does not show openprogram connected:\n%s", list)
	}
	// A named model, as a user may pick one: with the default "auto",
	// Gemini CLI first asks a flash-lite classifier to route the prompt,
	// which the fake cannot answer, and retries it with back-off for about
	// 100 s before it falls back to its default model.
	out := c.Run(t, 8*time.Minute, env, "node", gemini, "-p", "Use the openprogram tools as planned.", "--approval-mode", "yolo",
		"--model", "gemini-2.5-flash")
	if !strings.Contains(out, "interop done") {
		t.Errorf("gemini -p printed %q, want the fake's final answer", out)
	}
	c.CheckPrompt(t, fake)
}
