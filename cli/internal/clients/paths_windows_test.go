package clients

import (
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/cli/internal/settings"
)

// TestConfigPathsWindows: each client's user file is where that client
// reads it on Windows: %APPDATA% for Claude Desktop and VS Code,
// %USERPROFILE% for Cursor, Gemini CLI, Codex (or %CODEX_HOME%) and opencode
// (~/.config, or XDG_CONFIG_HOME). HOME, which Git Bash sets, is not the
// user's profile and is never used.
func TestConfigPathsWindows(t *testing.T) {
	profile := t.TempDir()
	appData := filepath.Join(t.TempDir(), "Roaming")
	env := settings.Env{"HOME=" + filepath.Join(t.TempDir(), "gitbash-home"), "USERPROFILE=" + profile, "APPDATA=" + appData}
	want := map[string]string{
		"claude-desktop": filepath.Join(appData, "Claude", "claude_desktop_config.json"),
		"cursor":         filepath.Join(profile, ".cursor", "mcp.json"),
		"vscode":         filepath.Join(appData, "Code", "User", "mcp.json"),
		"codex":          filepath.Join(profile, ".codex", "config.toml"),
		"opencode":       filepath.Join(profile, ".config", "opencode", "opencode.json"),
		"gemini":         filepath.Join(profile, ".gemini", "settings.json"),
	}
	for client, w := range want {
		if got, err := configPath(env, client, "user"); err != nil || got != w {
			t.Errorf("configPath(%s) = %q, %v; want %q", client, got, err, w)
		}
	}

	codexHome := filepath.Join(t.TempDir(), "codex")
	xdg := filepath.Join(t.TempDir(), "xdg")
	env = append(env, "CODEX_HOME="+codexHome, "XDG_CONFIG_HOME="+xdg)
	for client, w := range map[string]string{
		"codex":    filepath.Join(codexHome, "config.toml"),
		"opencode": filepath.Join(xdg, "opencode", "opencode.json"),
	} {
		if got, err := configPath(env, client, "user"); err != nil || got != w {
			t.Errorf("with CODEX_HOME and XDG_CONFIG_HOME: configPath(%s) = %q, %v; want %q", client, got, err, w)
		}
	}

	// Without APPDATA: the roaming folder under the profile.
	env = settings.Env{"USERPROFILE=" + profile}
	if got, _ := configPath(env, "claude-desktop", "user"); got != filepath.Join(profile, "AppData", "Roaming", "Claude", "claude_desktop_config.json") {
		t.Errorf("without APPDATA: configPath(claude-desktop) = %q", got)
	}
}
