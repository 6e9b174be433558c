package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/cli"
	"github.com/openprogram/openprogram/sessions"
)

// TestSessionsKeepTheTerminalSafe: what a model or a client wrote (a
// message, a title) reaches the terminal of `sessions show` and `sessions
// list` without its control characters, as chat and prompt show it; the
// JSON forms keep it exactly.
func TestSessionsKeepTheTerminalSafe(t *testing.T) {
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	st, err := sessions.Open(ctx, "sqlite:"+filepath.Join(state, cli.DatabaseFileName))
	if err != nil {
		t.Fatal(err)
	}
	const hostile = "fine\x1b]0;pwned\x07\x1b[2Jstill\x9b31m"
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "s1", AgentID: "main", Source: "mcp", Title: "t\x1b[31mitle"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.AppendMessages(ctx, "s1", "", []sessions.NewMessage{{Role: sessions.RoleAssistant, Content: hostile}}, true); err != nil {
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
	for _, args := range [][]string{{"sessions", "show", "s1"}, {"sessions", "list"}} {
		out := run(args...)
		if strings.ContainsAny(out, "\x1b\x07\u009b") {
			t.Errorf("%v wrote control characters to the terminal: %q", args, out)
		}
	}
	if out := run("sessions", "show", "s1"); !strings.Contains(out, "fine") || !strings.Contains(out, "still") {
		t.Errorf("sessions show lost the message's text: %q", out)
	}
	if out := run("sessions", "show", "s1", "--json"); !strings.Contains(out, `\u001b]0;pwned`) {
		t.Errorf("sessions show --json does not keep the content exactly: %q", out)
	}
}
