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

	"github.com/openprogram/openprogram/contracts"
)

// runStdin runs the binary with args and stdin.
func (in *install) runStdin(stdin string, args ...string) result {
	in.t.Helper()
	return in.runWith(binPath, in.env(), strings.NewReader(stdin), args...)
}

func TestPromptExitCodesAndStdin(t *testing.T) {
	in := newBareInstall(t, sqliteBackend)
	work := in.workDir()
	in.script(say("hello back"))

	r := in.run("prompt", "hi there")
	if r.code != 0 || !strings.Contains(r.stdout, "hello back") {
		t.Errorf("prompt = exit %d, stdout %q; want 0 and the reply", r.code, r.stdout)
	}
	sid := regexp.MustCompile(`cli_[0-9a-f]{32}`).FindString(r.stderr)
	if sid == "" {
		t.Fatalf("prompt stderr %q names no new session", r.stderr)
	}

	r = in.runStdin("a prompt\nfrom stdin\n", "prompt", "--session", sid, "-")
	if r.code != 0 || !strings.Contains(r.stdout, "hello back") {
		t.Errorf("prompt - = exit %d, stdout %q; want 0 and the reply", r.code, r.stdout)
	}
	branch := in.branchOf(sid)
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
		if r := in.runStdin(c.stdin, c.args...); r.code != c.code || r.stdout != "" {
			t.Errorf("%s: exit %d, stdout %q; want %d and nothing", c.name, r.code, r.stdout, c.code)
		}
	}

	in.script(failing())
	if r := in.run("prompt", "this fails"); r.code != 1 || !strings.Contains(r.stdout, "Turn failed") {
		t.Errorf("failed turn = exit %d, stdout %q; want 1 and the failure text", r.code, r.stdout)
	}

	// Non-interactive: a tool needing approval is denied at once.
	note := filepath.Join(work, "note.txt")
	in.script(calls("writing", toolCall("write", map[string]any{"path": note, "content": "x"})), say("no luck"))
	r = in.run("prompt", "write it")
	if r.code != 0 || !strings.Contains(r.stdout, "no luck") {
		t.Errorf("prompt = exit %d, stdout %q", r.code, r.stdout)
	}
	if _, err := os.Lstat(note); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("note.txt: %v, want no file (approval unavailable)", err)
	}
}

// The --json payload is what prompt_send returns for the same turn, byte
// for byte but for the assistant message id.
func TestPromptJSONEqualsPromptSend(t *testing.T) {
	in := newInstall(t, sqliteBackend)
	in.script(say("réponse <ok> & \"fin\""))
	r := in.run("prompt", "--json", "bonjour")
	if r.code != 0 {
		t.Fatalf("prompt --json = exit %d, stderr %q", r.code, r.stderr)
	}
	cliOut, ok := strings.CutSuffix(r.stdout, "\n")
	if !ok || strings.Contains(cliOut, "\n") {
		t.Fatalf("prompt --json stdout %q, want one line", r.stdout)
	}
	var got contracts.PromptSendResult
	if err := jsonStrict(cliOut, &got); err != nil {
		t.Fatalf("prompt --json %q: %v", cliOut, err)
	}

	c := in.serve(nil)
	ctx := ctxFor(t)
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: contracts.PromptSend,
		Arguments: map[string]any{"prompt": "encore", "session_id": got.SessionID}})
	if err != nil || res.IsError {
		t.Fatalf("prompt_send = %+v, %v", res, err)
	}
	mcpOut := onlyText(t, res.Content)
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
	forBackends(t, func(t *testing.T, backend string) {
		in := newInstall(t, backend)
		work := in.workDir()
		in.setJSON("tools.permission_rules", []map[string]string{{"tool": "write", "action": "allow"}, {"tool": "bash", "action": "allow"}})
		in.script(calls("owner work",
			toolCall("write", map[string]any{"path": filepath.Join(work, "owner.txt"), "content": "by the owner"}),
			toolCall("bash", map[string]any{"command": "touch " + filepath.Join(work, "owner-bash")})),
			say("owner done"))
		r := in.run("prompt", "--json", "do the owner's work")
		if r.code != 0 {
			t.Fatalf("prompt = exit %d, stderr %q", r.code, r.stderr)
		}
		var made contracts.PromptSendResult
		if err := jsonStrict(strings.TrimSpace(r.stdout), &made); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"owner.txt", "owner-bash"} {
			if _, err := os.Lstat(filepath.Join(work, f)); err != nil {
				t.Fatalf("the owner's %s: %v, want it made", f, err)
			}
		}

		in.script(calls("client work",
			toolCall("write", map[string]any{"path": filepath.Join(work, "client.txt"), "content": "by the client"}),
			toolCall("bash", map[string]any{"command": "touch " + filepath.Join(work, "client-bash")})),
			say("client done"))
		c := in.serve(nil)
		ctx := ctxFor(t)
		list, err := c.c.SessionsList(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(list, func(s contracts.SessionSummary) bool { return s.ID == made.SessionID }) {
			t.Fatalf("sessions_list = %+v, want %s", list, made.SessionID)
		}
		before, err := c.c.SessionGet(ctx, made.SessionID)
		if err != nil || len(before) != 5 || before[len(before)-1].ID != made.AssistantMsgID {
			t.Fatalf("session_get = %+v, %v; want the owner's 5 messages ending in %s", before, err, made.AssistantMsgID)
		}
		res, err := c.c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "now you", SessionID: made.SessionID})
		if err != nil || res.Failed || res.SessionID != made.SessionID {
			t.Fatalf("prompt_send = %+v, %v", res, err)
		}
		for _, f := range []string{"client.txt", "client-bash"} {
			if _, err := os.Lstat(filepath.Join(work, f)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the client's %s: %v, want it never made", f, err)
			}
		}
		after, err := c.c.SessionGet(ctx, made.SessionID)
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
