package winebin

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"

	"github.com/openprogram/openprogram/contracts"
)

// repoRoot is the checkout this test runs in (cli/e2e/winebin is three down).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// wineExec is scripts/wine/exec when its prefix is ready.
func wineExec(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("OPENPROGRAM_WINE_DIR")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "openprogram-wine")
	}
	if _, err := os.Stat(filepath.Join(dir, "prefix", "drive_c", "windows", "system32", "bcryptprimitives.dll")); err != nil {
		if os.Getenv("OPENPROGRAM_WINE_E2E") == "1" {
			t.Fatalf("no Wine prefix in %s: run make wine-setup", dir)
		}
		t.Skipf("no Wine prefix in %s (make wine-setup prepares it)", dir)
	}
	return filepath.Join(repoRoot(t), "scripts", "wine", "exec")
}

// winPath is how Wine's Windows programs see the Unix path p (drive Z: is /).
func winPath(p string) string { return `Z:` + strings.ReplaceAll(p, "/", `\`) }

// windowsUser is a Windows user made in a temp directory: Wine sets
// %USERPROFILE% and %APPDATA% itself whatever the Unix environment says,
// so every command runs through a .cmd file that sets them first.
type windowsUser struct {
	t                *testing.T
	wine, cmdFile    string
	profile, roaming string // Unix paths of %USERPROFILE% and %APPDATA%
	exeDir           string // the directory of openprogram.exe, as Wine names it
}

func newWindowsUser(t *testing.T, wine, exe string) *windowsUser {
	root := t.TempDir()
	u := &windowsUser{t: t, wine: wine, profile: filepath.Join(root, "Users", "me"), cmdFile: filepath.Join(root, "openprogram.cmd"), exeDir: winPath(filepath.Dir(exe))}
	u.roaming = filepath.Join(u.profile, "AppData", "Roaming")
	if err := os.MkdirAll(u.roaming, 0o700); err != nil {
		t.Fatal(err)
	}
	script := "@set \"USERPROFILE=" + winPath(u.profile) + "\"\r\n@set \"APPDATA=" + winPath(u.roaming) + "\"\r\n@\"" + winPath(exe) + "\" %*\r\n"
	if err := os.WriteFile(u.cmdFile, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	return u
}

// command is openprogram.exe with args, run as this user under Wine.
func (u *windowsUser) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, u.wine, append([]string{"cmd", "/c", winPath(u.cmdFile)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// run runs openprogram.exe args and returns its stdout; it fails the test
// unless the exit code is want.
func (u *windowsUser) run(env []string, want int, args ...string) string {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := u.command(ctx, env, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		u.t.Fatalf("openprogram.exe %s: %v", strings.Join(args, " "), err)
	}
	if code != want {
		u.t.Fatalf("openprogram.exe %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, stderr.String())
	}
	return string(out)
}

// buildExe cross-compiles openprogram.exe for windows/amd64 from this
// checkout.
func buildExe(ctx context.Context, t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "openprogram.exe")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", exe, "./cmd/openprogram")
	build.Dir = filepath.Join(repoRoot(t), "cli")
	build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build for windows/amd64: %v\n%s", err, out)
	}
	return exe
}

// TestWindowsBinary: openprogram.exe under Wine, as a Windows user: `mcp
// token create` in %USERPROFILE%\.openprogram, `mcp serve` answering
// initialize, tools/list and a prompt_send with the scripted model, `mcp
// install --client` for Claude Desktop, Cursor, VS Code and Codex into that
// user's %APPDATA% and %USERPROFILE% (each file naming openprogram.exe by
// its absolute path), and `doctor` reading them back.
func TestWindowsBinary(t *testing.T) {
	wine := wineExec(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	exe := buildExe(ctx, t)
	u := newWindowsUser(t, wine, exe)

	token := strings.TrimSpace(u.run(nil, 0, "mcp", "token", "create"))
	state := filepath.Join(u.profile, ".openprogram")
	if data, err := os.ReadFile(filepath.Join(state, "mcp_server_token")); err != nil || strings.TrimSpace(string(data)) != token {
		t.Fatalf("the token in %%USERPROFILE%%\\.openprogram = %q, %v; want the one printed", data, err)
	}
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":"hello from Windows"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	u.run(nil, 0, "config", "set", "model.provider", "scripted")
	u.run(nil, 0, "config", "set", "model.script", winPath(script))

	t.Run("mcp serve", func(t *testing.T) {
		cmd := u.command(ctx, []string{"OPENPROGRAM_MCP_TOKEN=" + token}, "mcp", "serve")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "wine", Version: "0"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 30 * time.Second}, nil)
		if err != nil {
			t.Fatalf("initialize: %v\nstderr: %s", err, stderr.String())
		}
		defer cs.Close()
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		if !strings.Contains(strings.Join(names, " "), "prompt_send") {
			t.Errorf("tools/list = %v, want prompt_send", names)
		}
		res, err := contracts.NewClient(cs).PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hello"})
		if err != nil || res.Failed || !strings.Contains(res.Text, "hello from Windows") {
			t.Errorf("prompt_send = %+v, %v; want the scripted reply\nstderr: %s", res, err, stderr.String())
		}
		if err := cs.Close(); err != nil {
			t.Errorf("close (stdin ends, the server exits): %v\nstderr: %s", err, stderr.String())
		}
	})

	files := map[string]string{
		"claude-desktop": filepath.Join(u.roaming, "Claude", "claude_desktop_config.json"),
		"cursor":         filepath.Join(u.profile, ".cursor", "mcp.json"),
		"vscode":         filepath.Join(u.roaming, "Code", "User", "mcp.json"),
		"codex":          filepath.Join(u.profile, ".codex", "config.toml"),
	}
	for _, client := range []string{"claude-desktop", "cursor", "vscode", "codex"} {
		u.run(nil, 0, "mcp", "install", "--client", client)
		data, err := os.ReadFile(files[client])
		if err != nil {
			t.Fatalf("install --client %s wrote no %s: %v", client, files[client], err)
		}
		var command string
		if client == "codex" {
			var doc struct {
				Servers map[string]struct{ Command string } `toml:"mcp_servers"`
			}
			if err := toml.Unmarshal(data, &doc); err != nil {
				t.Fatalf("%s: %v", files[client], err)
			}
			command = doc.Servers["openprogram"].Command
		} else {
			std, err := hujson.Standardize(data)
			if err != nil {
				t.Fatalf("%s: %v", files[client], err)
			}
			var doc map[string]map[string]struct{ Command string }
			top := "mcpServers"
			if client == "vscode" {
				top = "servers"
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(std, &raw); err != nil {
				t.Fatal(err)
			}
			doc = map[string]map[string]struct{ Command string }{}
			var servers map[string]struct{ Command string }
			if err := json.Unmarshal(raw[top], &servers); err != nil {
				t.Fatalf("%s: %v", files[client], err)
			}
			doc[top] = servers
			command = doc[top]["openprogram"].Command
		}
		if !strings.EqualFold(command, winPath(exe)) {
			t.Errorf("%s starts %q, want openprogram.exe at %s", files[client], command, winPath(exe))
		}
	}

	out := u.run([]string{"OPENPROGRAM_MCP_TOKEN=" + token}, 0, "doctor")
	t.Logf("doctor under Wine:\n%s", out)
	for _, want := range []string{"state directory", "token", "client claude-desktop", "client cursor", "client vscode", "client codex"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor does not report %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FAIL") {
			t.Errorf("doctor failed a check: %s\n%s", line, out)
		}
	}
	if strings.Contains(out, token) {
		t.Error("doctor printed the token")
	}
}
