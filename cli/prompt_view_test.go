package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli"
)

// hostile is model text holding an OSC 52 clipboard write, a clear screen,
// C1 controls (CSI, OSC as single characters), a bell, a carriage return and
// DEL.
const hostile = "safe \x1b]52;c;ZXZpbA==\x07 \x1b[2J mid \u009b31m \u009d0;title\u009c back\r\x7f end"

// TestPromptStripsControlCharacters: prompt's plain output (not a terminal
// here) carries none of the model's control characters; --json keeps the
// text exactly, escaped as JSON.
func TestPromptStripsControlCharacters(t *testing.T) {
	env, _ := fresh(t)
	script, _ := json.Marshal([]map[string]string{{"text": hostile}, {"text": hostile}})
	scriptedModel(t, env, string(script))
	r := runCLI(t, env, "prompt", "say it")
	if r.code != 0 || !strings.Contains(r.stdout, "safe") || !strings.Contains(r.stdout, "end") {
		t.Fatalf("prompt = exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	for _, c := range r.stdout + r.stderr {
		if (c < ' ' && c != '\n' && c != '\t') || (c >= 0x7f && c <= 0x9f) {
			t.Fatalf("prompt output holds control character %U:\n%q", c, r.stdout+r.stderr)
		}
	}
	r = runCLI(t, env, "prompt", "--json", "say it")
	var payload struct{ Text string }
	if err := json.Unmarshal([]byte(r.stdout), &payload); err != nil || r.code != 0 {
		t.Fatalf("prompt --json = exit %d stdout %q (%v)", r.code, r.stdout, err)
	}
	if !strings.HasSuffix(payload.Text, hostile) {
		t.Errorf("prompt --json text = %q, want it to end with the model's exact text", payload.Text)
	}
}

// TestPromptShowsDeniedTool: a tool the gate denies shows as a line on
// stderr, and the turn ends with a stderr line naming it, even when the
// reply glosses over it; the turn still answered, so the exit is 0.
func TestPromptShowsDeniedTool(t *testing.T) {
	env, _ := fresh(t)
	scriptedModel(t, env, `[{"tool_calls":[{"id":"c1","name":"write","arguments":{"path":"notes.txt","content":"x"}}]},{"text":"Done with the file step"}]`)
	mustCLI(t, env, "config", "set", "tools.permission_rules", `[{"tool":"write","action":"deny"}]`)
	for _, args := range [][]string{{"prompt", "write the file"}, {"prompt", "--json", "write the file"}} {
		r := runCLI(t, env, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Done with the file step") {
			t.Fatalf("%v = exit %d stdout %q stderr %q", args, r.code, r.stdout, r.stderr)
		}
		for _, want := range []string{"-> write\n", "<- write denied", "denied in this turn: write"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v: stderr %q lacks %q", args, r.stderr, want)
			}
		}
	}
}

// TestPromptStreams: the reply reaches stdout while the turn still runs.
// stdout is a pipe, whose writes wait for the reader: the first read sees
// only the first streamed words, never the whole reply written at the end.
func TestPromptStreams(t *testing.T) {
	env, _ := fresh(t)
	scriptedModel(t, env, `[{"text":"alpha beta gamma delta"}]`)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		app := &cli.App{Stdin: strings.NewReader(""), Stdout: pw, Stderr: &stderr, Env: env, Version: testVersion, Executable: testExe}
		done <- cli.Main(ctx, app, []string{"prompt", "go"})
		pw.Close()
	}()
	buf := make([]byte, 4096)
	n, err := pr.Read(buf)
	if err != nil {
		t.Fatalf("read stdout: %v", err)
	}
	first := string(buf[:n])
	rest, _ := io.ReadAll(pr)
	if code := <-done; code != 0 {
		t.Fatalf("prompt = exit %d stderr %s", code, stderr.String())
	}
	if strings.Contains(first, "delta") {
		t.Errorf("the first write to stdout held the whole reply %q: it was not streamed", first)
	}
	if all := first + string(rest); !strings.Contains(all, "alpha beta gamma delta") {
		t.Errorf("stdout = %q, want the whole reply", all)
	}
}
