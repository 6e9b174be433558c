package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
)

// TestInteropCodexCLI: the Codex CLI (@openai/codex, pinned in
// interop/codex/package-lock.json) reads the config.toml that `openprogram mcp
// install --client codex` wrote into a file that already had a server of
// its own: `codex mcp list --json` shows both, ours with the binary, `mcp
// serve`, the state dir, the secrets forwarded by name and a 600 s tool
// timeout.
func TestInteropCodexCLI(t *testing.T) {
	// The interop tests share nothing but the npm projects (NpmCI takes
	// turns on one directory) and mostly wait on clients and turns.
	t.Parallel()
	node := e2etest.RequireTool(t, "node")
	npm := e2etest.RequireTool(t, "npm")
	dir := filepath.Join(interopRoot(t), "codex")
	e2etest.NpmCI(t, npm, dir)

	st := interopSetup(t)
	codexHome := filepath.Join(st.userHome, "codex-home")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	existing := "# mine\n[mcp_servers.other]\ncommand = \"/usr/bin/other\"\nargs = [\"--flag\"]\n"
	configPath := filepath.Join(codexHome, "config.toml")
	if err := os.WriteFile(configPath, []byte(existing), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	install := exec.CommandContext(ctx, e2etest.BinPath, "mcp", "install", "--client", "codex")
	install.Env = append(interopBaseEnv(st.userHome), "OPENPROGRAM_HOME="+st.home, "CODEX_HOME="+codexHome)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mcp install --client codex: %v\n%s", err, out)
	}

	list := exec.CommandContext(ctx, node, filepath.Join(dir, "node_modules", "@openai", "codex", "bin", "codex.js"), "mcp", "list", "--json")
	list.Env = append(interopBaseEnv(st.userHome), "CODEX_HOME="+codexHome)
	var stdout, stderr bytes.Buffer
	list.Stdout, list.Stderr = &stdout, &stderr
	if err := list.Run(); err != nil {
		t.Fatalf("codex mcp list --json: %v\n%s", err, stderr.String())
	}
	var servers []struct {
		Name      string `json:"name"`
		Enabled   bool   `json:"enabled"`
		Transport struct {
			Type    string            `json:"type"`
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
			EnvVars []string          `json:"env_vars"`
		} `json:"transport"`
		ToolTimeoutSec float64 `json:"tool_timeout_sec"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &servers); err != nil {
		t.Fatalf("codex mcp list --json printed no JSON list: %v\n%s", err, stdout.String())
	}
	names := map[string]int{}
	for i, s := range servers {
		names[s.Name] = i
	}
	i, ok := names["openprogram"]
	if _, other := names["other"]; !ok || !other {
		t.Fatalf("codex lists %v, want openprogram and other", names)
	}
	ours := servers[i]
	if !ours.Enabled || ours.Transport.Type != "stdio" || ours.Transport.Command != e2etest.BinPath ||
		!cmp.Equal(ours.Transport.Args, []string{"mcp", "serve"}) || ours.ToolTimeoutSec != 600 {
		t.Errorf("codex reads our server as %+v", ours)
	}
	if diff := cmp.Diff(map[string]string{"OPENPROGRAM_HOME": st.home}, ours.Transport.Env); diff != "" {
		t.Errorf("codex env of our server (-want +got):\n%s", diff)
	}
	// The scripted model needs no key: only the token is forwarded.
	if diff := cmp.Diff([]string{"OPENPROGRAM_MCP_TOKEN"}, ours.Transport.EnvVars); diff != "" {
		t.Errorf("codex env_vars of our server (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), st.token) || !strings.HasPrefix(string(data), existing) {
		t.Errorf("config.toml after install (token written, or the old content changed):\n%s", data)
	}
}
