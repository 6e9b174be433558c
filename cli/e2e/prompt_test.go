//go:build unix

package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/contracts"
)

// runStdin runs the binary with args and stdin.
func runStdin(in *e2etest.Install, stdin string, args ...string) e2etest.Result {
	in.T.Helper()
	return in.RunWith(e2etest.BinPath, in.Env(), strings.NewReader(stdin), args...)
}

func TestPromptExitCodesAndStdin(t *testing.T) {
	t.Parallel()
	in := e2etest.NewBareInstall(t, e2etest.SQLite)
	work := workDir(in)
	in.Script(e2etest.Say("hello back"))

	r := in.Run("prompt", "hi there")
	if r.Code != 0 || !strings.Contains(r.Stdout, "hello back") {
		t.Errorf("prompt = exit %d, stdout %q; want 0 and the reply", r.Code, r.Stdout)
	}
	sid := regexp.MustCompile(`cli_[0-9a-f]{32}`).FindString(r.Stderr)
	if sid == "" {
		t.Fatalf("prompt stderr %q names no new session", r.Stderr)
	}

	r = runStdin(in, "a prompt\nfrom stdin\n", "prompt", "--session", sid, "-")
	if r.Code != 0 || !strings.Contains(r.Stdout, "hello back") {
		t.Errorf("prompt - = exit %d, stdout %q; want 0 and the reply", r.Code, r.Stdout)
	}
	branch := branchOf(in, sid)
	if len(branch) != 4 || branch[2]["content"] != "a prompt\nfrom stdin\n" {
		t.Errorf("branch = %+v, want the stdin prompt as the third message", branch)
	}

	for _, c := range []struct {
		name  string
		stdin string
		args  []string
		code  int
	}{
		{"blank", "", []string{"prompt", "   "}, 2},
		{"blank stdin", " \n", []string{"prompt", "-"}, 2},
		{"nul", "a\x00b", []string{"prompt", "-"}, 2},
		{"unknown session", "", []string{"prompt", "--session", "cli_nope", "hi"}, 1},
	} {
		if r := runStdin(in, c.stdin, c.args...); r.Code != c.code || r.Stdout != "" {
			t.Errorf("%s: exit %d, stdout %q; want %d and nothing", c.name, r.Code, r.Stdout, c.code)
		}
	}

	in.Script(e2etest.Failing())
	if r := in.Run("prompt", "this fails"); r.Code != 1 || !strings.Contains(r.Stdout, "Turn failed") {
		t.Errorf("failed turn = exit %d, stdout %q; want 1 and the failure text", r.Code, r.Stdout)
	}

	// Non-interactive: a tool needing approval is denied at once.
	note := filepath.Join(work, "note.txt")
	in.Script(e2etest.Calls("writing", e2etest.ToolCall("write", map[string]any{"path": note, "content": "x"})), e2etest.Say("no luck"))
	r = in.Run("prompt", "write it")
	if r.Code != 0 || !strings.Contains(r.Stdout, "no luck") {
		t.Errorf("prompt = exit %d, stdout %q", r.Code, r.Stdout)
	}
	if _, err := os.Lstat(note); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("note.txt: %v, want no file (approval unavailable)", err)
	}
}

// The --json payload is what prompt_send returns for the same turn, byte
// for byte but for the assistant message id.
func TestPromptJSONEqualsPromptSend(t *testing.T) {
	t.Parallel()
	in := e2etest.NewInstall(t, e2etest.SQLite)
	in.Script(e2etest.Say("réponse <ok> & \"fin\""))
	r := in.Run("prompt", "--json", "bonjour")
	if r.Code != 0 {
		t.Fatalf("prompt --json = exit %d, stderr %q", r.Code, r.Stderr)
	}
	cliOut, ok := strings.CutSuffix(r.Stdout, "\n")
	if !ok || strings.Contains(cliOut, "\n") {
		t.Fatalf("prompt --json stdout %q, want one line", r.Stdout)
	}
	var got contracts.PromptSendResult
	if err := jsonStrict(cliOut, &got); err != nil {
		t.Fatalf("prompt --json %q: %v", cliOut, err)
	}

	c := in.Serve(nil)
	ctx := e2etest.Ctx(t)
	res, err := c.Session.CallTool(ctx, &mcp.CallToolParams{Name: contracts.PromptSend,
		Arguments: map[string]any{"prompt": "encore", "session_id": got.SessionID}})
	if err != nil || res.IsError {
		t.Fatalf("prompt_send = %+v, %v", res, err)
	}
	mcpOut := e2etest.OnlyText(t, res.Content)
	var want contracts.PromptSendResult
	if err := jsonStrict(mcpOut, &want); err != nil {
		t.Fatalf("prompt_send payload %q: %v", mcpOut, err)
	}
	if want.SessionID != got.SessionID || want.Text != got.Text {
		t.Fatalf("prompt_send = %+v, want the same session and text as %+v", want, got)
	}
	if a, b := strings.Replace(cliOut, got.AssistantMsgID, "ID", 1), strings.Replace(mcpOut, want.AssistantMsgID, "ID", 1); a != b {
		t.Errorf("prompt --json = %s\nprompt_send    = %s\nwant the same bytes", a, b)
	}
}

// A session the owner made in the console is an ordinary session: an MCP
// client lists it, reads it and continues it, with its own paired
// authority: the same tools the owner could run are denied to it.
func TestConsoleSessionContinuedOverMCP(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, func(t *testing.T, backend string) {
		in := e2etest.NewInstall(t, backend)
		work := workDir(in)
		in.SetJSON("tools.permission_rules", []map[string]string{{"tool": "write", "action": "allow"}, {"tool": "bash", "action": "allow"}})
		in.Script(e2etest.Calls("owner work",
			e2etest.ToolCall("write", map[string]any{"path": filepath.Join(work, "owner.txt"), "content": "by the owner"}),
			e2etest.ToolCall("bash", map[string]any{"command": "touch " + filepath.Join(work, "owner-bash")})),
			e2etest.Say("owner done"))
		r := in.Run("prompt", "--json", "do the owner's work")
		if r.Code != 0 {
			t.Fatalf("prompt = exit %d, stderr %q", r.Code, r.Stderr)
		}
		var made contracts.PromptSendResult
		if err := jsonStrict(strings.TrimSpace(r.Stdout), &made); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"owner.txt", "owner-bash"} {
			if _, err := os.Lstat(filepath.Join(work, f)); err != nil {
				t.Fatalf("the owner's %s: %v, want it made", f, err)
			}
		}

		in.Script(e2etest.Calls("client work",
			e2etest.ToolCall("write", map[string]any{"path": filepath.Join(work, "client.txt"), "content": "by the client"}),
			e2etest.ToolCall("bash", map[string]any{"command": "touch " + filepath.Join(work, "client-bash")})),
			e2etest.Say("client done"))
		c := in.Serve(nil)
		ctx := e2etest.Ctx(t)
		list, err := c.Client.SessionsList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(list, func(s contracts.SessionSummary) bool { return s.ID == made.SessionID }) {
			t.Fatalf("sessions_list = %+v, want %s", list, made.SessionID)
		}
		before, err := c.Client.SessionGet(ctx, made.SessionID)
		if err != nil || len(before) != 5 || before[len(before)-1].ID != made.AssistantMsgID {
			t.Fatalf("session_get = %+v, %v; want the owner's 5 messages ending in %s", before, err, made.AssistantMsgID)
		}
		res, err := c.Client.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "now you", SessionID: made.SessionID})
		if err != nil || res.Failed || res.SessionID != made.SessionID {
			t.Fatalf("prompt_send = %+v, %v", res, err)
		}
		for _, f := range []string{"client.txt", "client-bash"} {
			if _, err := os.Lstat(filepath.Join(work, f)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the client's %s: %v, want it never made", f, err)
			}
		}
		after, err := c.Client.SessionGet(ctx, made.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		var denials []string
		for _, m := range after[len(before):] {
			if m.Role == "tool" {
				denials = append(denials, m.Content)
			}
		}
		if len(denials) != 2 || !strings.Contains(denials[0], "does not allow fs.write") || !strings.Contains(denials[1], "hard constraint") {
			t.Errorf("the client turn's tool results = %q, want write denied by tier and bash by a hard constraint", denials)
		}
	})
}

// jsonStrict decodes one JSON value into v, refusing unknown fields.
func jsonStrict(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
