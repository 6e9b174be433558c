package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/cli"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/sessions"
)

// `config set` runs the provider's check of the model settings on the whole
// configuration, in either order, and saves nothing it refuses.
func TestConfigSetRefusesAnthropicSampling(t *testing.T) {
	// `config set` runs the check, in either order, and saves nothing.
	env := cli.Env{"OPENPROGRAM_HOME=" + filepath.Join(t.TempDir(), "state")}
	run := func(args ...string) (int, string) {
		var out, errb strings.Builder
		code := cli.Main(t.Context(), &cli.App{Stdout: &out, Stderr: &errb, Env: env, Version: "test"}, args)
		return code, errb.String()
	}
	if code, _ := run("config", "set", "model.temperature", "0.5"); code != 0 {
		t.Fatal("config set model.temperature failed")
	}
	if code, stderr := run("config", "set", "model.provider", "anthropic"); code == 0 || !strings.Contains(stderr, "rejects temperature") {
		t.Errorf("config set model.provider anthropic after a temperature = exit %d, %q; want a refusal with the reason", code, stderr)
	}
}

func TestSessionsShowUsage(t *testing.T) {
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	st, err := sessions.Open(ctx, "sqlite:"+filepath.Join(state, cli.DatabaseFileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "s1", AgentID: "main", Source: "mcp"}); err != nil {
		t.Fatal(err)
	}
	// The usage key of the runtime's stored message metadata.
	type usageMeta struct {
		Usage *provider.Usage `json:"usage"`
	}
	meta := func(m usageMeta) json.RawMessage {
		data, _ := json.Marshal(m)
		return data
	}
	if _, err := st.AppendMessages(ctx, "s1", "", []sessions.NewMessage{
		{Role: sessions.RoleUser, Content: "q"},
		{Role: sessions.RoleAssistant, Content: "calling", Metadata: meta(usageMeta{Usage: &provider.Usage{InputTokens: 100, OutputTokens: 10}})},
		{Role: sessions.RoleAssistant, Content: "a", Metadata: meta(usageMeta{Usage: &provider.Usage{InputTokens: 150, OutputTokens: 5}})},
	}, true); err != nil {
		t.Fatal(err)
	}
	st.Close()

	run := func(args ...string) string {
		var out, errb strings.Builder
		app := &cli.App{Stdout: &out, Stderr: &errb, Env: cli.Env{"OPENPROGRAM_HOME=" + state}, Version: "test"}
		if code := cli.Main(ctx, app, args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if out := run("sessions", "show", "s1"); !strings.Contains(out, "tokens: 250 input, 15 output over 2 model calls") {
		t.Errorf("sessions show lacks the usage totals:\n%s", out)
	}
	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(run("sessions", "show", "s1", "--json")), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if diff := cmp.Diff(map[string]any{"input_tokens": 150.0, "output_tokens": 5.0}, lines[2]["usage"]); diff != "" || lines[0]["usage"] != nil {
		t.Errorf("JSON usage (-want +got):\n%s", diff)
	}
}
