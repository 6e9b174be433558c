package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli"
)

// serveChildVar makes the test binary run `mcp serve` on its own stdin and
// stdout (TestServeStdioIsBinary starts it so).
const serveChildVar = "OPENPROGRAM_TEST_SERVE_CHILD"

// TestServeStdioIsBinary: `mcp serve` as a client starts it, a process on
// its own stdin and stdout, answers initialize, tools/list and a
// prompt_send with lines that end in "\n" and never hold a "\r" (on
// Windows too: Go writes os.Stdout's bytes as they are, there is no text
// mode), and exits 0 once its stdin ends.
func TestServeStdioIsBinary(t *testing.T) {
	if os.Getenv(serveChildVar) == "1" {
		app := &cli.App{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Env: os.Environ(), Version: testVersion, Executable: testExe}
		os.Exit(cli.Main(context.Background(), app, []string{"mcp", "serve"}))
	}
	env, _ := fresh(t)
	token := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
	scriptedModel(t, env, `[{"text":"first line\nsecond line"}]`)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestServeStdioIsBinary$")
	cmd.Env = append(env, serveChildVar+"=1", "OPENPROGRAM_MCP_TOKEN="+token, "SYSTEMROOT="+os.Getenv("SYSTEMROOT"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	lines := bufio.NewReader(io.TeeReader(stdout, &raw))
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatalf("write %s: %v\nstderr: %s", msg, err, stderr.String())
		}
	}
	await := func(id int) map[string]any {
		t.Helper()
		for {
			line, err := lines.ReadBytes('\n')
			if err != nil {
				t.Fatalf("read the answer to %d: %v\nstdout so far: %q\nstderr: %s", id, err, raw.String(), stderr.String())
			}
			var msg map[string]any
			if err := json.Unmarshal(line, &msg); err != nil {
				t.Fatalf("stdout line %q is not JSON: %v", line, err)
			}
			if msg["id"] == float64(id) {
				return msg
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if r := await(1); r["result"] == nil {
		t.Fatalf("initialize = %v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r := await(2); !strings.Contains(mustJSON(t, r), `"prompt_send"`) {
		t.Errorf("tools/list = %v, want prompt_send among the tools", r)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hello"}}}`)
	if r := await(3); !strings.Contains(mustJSON(t, r), `first line\\nsecond line`) {
		t.Errorf("prompt_send = %v, want the scripted reply", r)
	}
	stdin.Close()
	if _, err := io.Copy(io.Discard, lines); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mcp serve after stdin ended: %v (want exit 0)\nstderr: %s", err, stderr.String())
	}
	if bytes.Contains(raw.Bytes(), []byte("\r")) {
		t.Errorf("mcp serve wrote a carriage return to stdout:\n%q", raw.String())
	}
	if !bytes.HasSuffix(raw.Bytes(), []byte("}\n")) {
		t.Errorf("stdout does not end with a complete line: %q", raw.String())
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
