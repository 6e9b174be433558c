package codex

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

	"github.com/openprogram/openprogram/cli/e2e/fakemodel"
	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/cli/e2e/internal/interoptest"
)

// codexJS is the Codex CLI's launcher in the installed project dir.
func codexJS(dir string) string {
	return filepath.Join(dir, "node_modules", "@openai", "codex", "bin", "codex.js")
}

// Install writes config.toml, and `codex exec` with a model provider
// pointing at the fake Responses API calls all six tools.
func TestCodexExec(t *testing.T) {
	// The two tests share only the npm project (NpmCI takes turns on it);
	// this one mostly waits out the long turn.
	t.Parallel()
	dir := interoptest.Project(t, "codex")
	c := interoptest.NewClient(t)
	fake := fakemodel.NewResponses(interoptest.FullPlan(c.DenyPath))
	defer interoptest.CloseFake(t, fake)
	codexHome := filepath.Join(c.UserHome, "codex-home")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	provider := "model = \"fake\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"" + fake.URL +
		"/v1\"\nwire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(provider), 0o600); err != nil {
		t.Fatal(err)
	}
	env := c.Env("CODEX_HOME=" + codexHome)
	c.AddTo(t, "codex", env)
	// codex exec cannot ask, and Codex asks before every MCP tool that is
	// not read-only; install leaves that to the user, the test approves.
	// Without required, a server slower to start than Codex's 10 s start-up
	// timeout (the race-enabled binary on a loaded machine) would leave
	// Codex running silently without our tools.
	out := c.Run(t, 8*time.Minute, env, "node", codexJS(dir), "exec", "--skip-git-repo-check",
		"-c", `mcp_servers.openprogram.default_tools_approval_mode="approve"`,
		"-c", "mcp_servers.openprogram.required=true", "-c", "mcp_servers.openprogram.startup_timeout_sec=120",
		"Use the openprogram tools as planned.")
	if !strings.Contains(out, "interop done") {
		t.Errorf("codex exec printed %q, want the fake's final answer", out)
	}
	c.CheckFull(t, fake)
}

// Codex reads the config.toml that `openprogram mcp install --client codex`
// wrote into a file that already had a server of its own: `codex mcp list
// --json` shows both, ours with the binary, `mcp serve`, the state dir, the
// secrets forwarded by name and a 600 s tool timeout.
func TestCodexMCPList(t *testing.T) {
	t.Parallel()
	dir := interoptest.Project(t, "codex")
	in := interoptest.Setup(t)
	codexHome := filepath.Join(in.UserHome, "codex-home")
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	existing := "# mine\n[mcp_servers.other]\ncommand = \"/usr/bin/other\"\nargs = [\"--flag\"]\n"
	configPath := filepath.Join(codexHome, "config.toml")
	if err := os.WriteFile(configPath, []byte(existing), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := in.RunExe(e2etest.BinPath, in.Env("CODEX_HOME="+codexHome), "mcp", "install", "--client", "codex"); r.Code != 0 {
		t.Fatalf("mcp install --client codex: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list := exec.CommandContext(ctx, "node", codexJS(dir), "mcp", "list", "--json")
	list.Env = append(interoptest.BaseEnv(in.UserHome), "CODEX_HOME="+codexHome)
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
	if diff := cmp.Diff(map[string]string{"OPENPROGRAM_HOME": in.Home}, ours.Transport.Env); diff != "" {
		t.Errorf("codex env of our server (-want +got):\n%s", diff)
	}
	// The scripted model needs no key: only the token is forwarded.
	if diff := cmp.Diff([]string{e2etest.EnvToken}, ours.Transport.EnvVars); diff != "" {
		t.Errorf("codex env_vars of our server (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(configPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), in.Token) || !strings.HasPrefix(string(data), existing) {
		t.Errorf("config.toml after install (token written, or the old content changed):\n%s", data)
	}
}
