// Package demo is the README's main job: it creates a fresh state directory,
// a token and a scripted model, then drives `openprogram mcp serve` with a
// real MCP client session (go-sdk over stdio) through all six tools,
// printing what happens.
package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openprogram/openprogram/internal/clip"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/internal/privatefile"
)

// script is what the scripted model replies, one entry per model call:
// prompt 1 searches memory and answers; prompt 2 streams slowly and is cancelled.
const script = `{"turns": [
  {"text": "Let me look in memory first.", "tool_calls": [{"name": "memory_search", "arguments": {"query": "demo"}}]},
  {"text": "Memory holds one note about this demo: the server is authenticated and stdio only."},
  {"text": "This answer streams one word at a time so that the client can cancel it long before it ends, and it never does end.", "delay_ms": 300}
]}`

// Options are the demo's inputs.
type Options struct {
	Binary string    // the openprogram binary
	Home   string    // the state directory to create afresh
	Out    io.Writer // the transcript
}

// Run runs the demo end to end.
func Run(ctx context.Context, o Options) error {
	d := &demo{Options: o}
	return d.run(ctx)
}

type demo struct {
	Options
	step int
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.Out, format+"\n", args...)
}

func (d *demo) section(title string) {
	d.step++
	fmt.Fprintf(d.Out, "\n== %d. %s\n", d.step, title)
}

func (d *demo) env(extra ...string) []string {
	env := []string{"OPENPROGRAM_HOME=" + d.Home, "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	return append(env, extra...)
}

// cli runs the openprogram binary and returns its stdout.
func (d *demo) cli(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, d.Binary, args...)
	cmd.Env = d.env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("openprogram %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func (d *demo) run(ctx context.Context) error {
	d.section("a fresh state directory")
	if err := os.RemoveAll(d.Home); err != nil {
		return fmt.Errorf("remove old demo state: %w", err)
	}
	if err := os.MkdirAll(d.Home, 0o700); err != nil {
		return fmt.Errorf("create demo state: %w", err)
	}
	d.say("OPENPROGRAM_HOME=%s", d.Home)

	d.section("openprogram mcp token create")
	out, err := d.cli(ctx, "mcp", "token", "create")
	if err != nil {
		return err
	}
	token := strings.TrimSuffix(out, "\n")
	d.say("token created: %d characters, stored 0600 in %s (not shown here)", len(token), filepath.Join(d.Home, "mcp_server_token"))

	d.section("configure: scripted model, exposed tools")
	scriptPath := filepath.Join(d.Home, "demo-script.json")
	if err := privatefile.CreateNew(scriptPath, []byte(script)); err != nil {
		return fmt.Errorf("write the demo script: %w", err)
	}
	for _, kv := range [][2]string{
		{"model.provider", "scripted"},
		{"model.script", scriptPath},
		{"mcp_server.exposed_tools", `["memory_status","memory_update","memory_search","memory_get","bash","read"]`},
	} {
		if _, err := d.cli(ctx, "config", "set", kv[0], kv[1]); err != nil {
			return err
		}
		d.say("openprogram config set %s %s", kv[0], kv[1])
	}

	d.section("connect a go-sdk MCP client to `openprogram mcp serve` over stdio")
	logPath := filepath.Join(d.Home, "serve.log")
	logFile, err := privatefile.OpenAppend(logPath) // the state directory is new: so is the log
	if err != nil {
		return fmt.Errorf("open the server log: %w", err)
	}
	defer logFile.Close()
	serve := exec.Command(d.Binary, "mcp", "serve")
	serve.Env = d.env("OPENPROGRAM_MCP_TOKEN=" + token)
	serve.Stderr = logFile
	client := mcp.NewClient(&mcp.Implementation{Name: "openprogram-demo", Version: "1"},
		&mcp.ClientOptions{ProgressNotificationHandler: contracts.HandleProgress})
	start := time.Now()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: serve}, nil)
	if err != nil {
		return fmt.Errorf("connect to openprogram mcp serve (server log: %s): %w", logPath, err)
	}
	defer cs.Close()
	init := cs.InitializeResult()
	d.say("initialized in %s: server %s %s, protocol %s, server log in %s",
		time.Since(start).Round(time.Millisecond), init.ServerInfo.Name, init.ServerInfo.Version, init.ProtocolVersion, logPath)

	d.section("tools/list: the six fixed tools, in order")
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range lt.Tools {
		d.say("  %s", t.Name)
	}

	c := contracts.NewClient(cs)
	d.section("tools_list: runtime tools exposed to MCP (bash and read are configured but the paired tier cannot use them)")
	rts, err := c.ToolsList(ctx)
	if err != nil {
		return fmt.Errorf("tools_list: %w", err)
	}
	for _, t := range rts {
		d.say("  %s", t.Name)
	}

	d.section("tool_call memory_update, then memory_search")
	if err := d.toolCall(ctx, c, "memory_update", map[string]any{"path": "notes/demo", "content": "The demo server is authenticated and stdio only."}); err != nil {
		return err
	}
	if err := d.toolCall(ctx, c, "memory_search", map[string]any{"query": "demo"}); err != nil {
		return err
	}

	d.section("tool_call bash: exposed in config, denied by the gate without running")
	if err := d.toolCall(ctx, c, "bash", map[string]any{"command": "id"}); err != nil {
		return err
	}
	d.section("tool_call of a tool that is not exposed: JSON-RPC error, same as an unknown name")
	if err := d.toolCall(ctx, c, "write", map[string]any{"path": "x", "content": "y"}); err != nil {
		return err
	}

	d.section("prompt_send (new session), with progress")
	res, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "What do you remember about the demo?"},
		contracts.WithProgress(func(p float64, msg string) { d.say("  progress %v: %s", p, msg) }))
	if err != nil {
		return fmt.Errorf("prompt_send: %w", err)
	}
	d.say("result: session=%s failed=%v assistant_msg_id=%s", res.SessionID, res.Failed, res.AssistantMsgID)
	d.say("text: %s", res.Text)

	d.section("sessions_list")
	list, err := c.SessionsList(ctx)
	if err != nil {
		return fmt.Errorf("sessions_list: %w", err)
	}
	for _, s := range list {
		d.say("  %s  %q  updated %s", s.ID, s.Title, time.Unix(s.UpdatedAt, 0).Format(time.DateTime))
	}

	d.section("session_get: the active branch, root first")
	msgs, err := c.SessionGet(ctx, res.SessionID)
	if err != nil {
		return fmt.Errorf("session_get: %w", err)
	}
	for _, m := range msgs {
		d.say("  [%s] %s", m.Role, clip.String(strings.Join(strings.Fields(m.Content), " "), 100))
	}

	d.section("prompt_send that streams slowly, cancelled with prompt_cancel")
	if err := d.cancelDemo(ctx, c, res.SessionID); err != nil {
		return err
	}

	if err := cs.Close(); err != nil && !errors.Is(err, io.EOF) {
		d.say("close: %v", err)
	}

	d.section("openprogram audit tail -n 12 (no prompt text, no content, no token)")
	out, err = d.cli(ctx, "audit", "tail", "-n", "12")
	if err != nil {
		return err
	}
	fmt.Fprint(d.Out, out)
	d.section("openprogram audit verify")
	out, err = d.cli(ctx, "audit", "verify")
	if err != nil {
		return err
	}
	fmt.Fprint(d.Out, out)
	d.say("\ndemo finished: all six tools worked against SQLite and the scripted model")
	return nil
}

func (d *demo) toolCall(ctx context.Context, c *contracts.Client, name string, args map[string]any) error {
	content, err := c.ToolCall(ctx, name, args)
	var te *contracts.ToolError
	var pe *contracts.ProtocolError
	switch {
	case errors.As(err, &te):
		d.say("  %s -> isError: %s", name, te.Text)
	case errors.As(err, &pe):
		d.say("  %s -> JSON-RPC error %d: %s", name, pe.Code, pe.Message)
	case err != nil:
		return fmt.Errorf("tool_call %s: %w", name, err)
	default:
		for _, ct := range content {
			if tc, ok := ct.(*mcp.TextContent); ok {
				d.say("  %s -> %s", name, clip.String(strings.Join(strings.Fields(tc.Text), " "), 160))
			}
		}
	}
	return nil
}

func (d *demo) cancelDemo(ctx context.Context, c *contracts.Client, sessionID string) error {
	started := make(chan struct{})
	var once sync.Once
	type outcome struct {
		res contracts.PromptSendResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := c.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "Tell me a long story.", SessionID: sessionID},
			contracts.WithProgress(func(p float64, msg string) {
				d.say("  progress %v: %s", p, msg)
				once.Do(func() { close(started) })
			}))
		done <- outcome{r, err}
	}()
	select {
	case <-started:
	case o := <-done:
		return fmt.Errorf("the slow prompt finished before it could be cancelled: %+v %v", o.res, o.err)
	case <-time.After(30 * time.Second):
		return errors.New("the slow prompt reported no progress within 30s")
	}
	time.Sleep(500 * time.Millisecond)
	cancelStart := time.Now()
	pc, err := c.PromptCancel(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("prompt_cancel: %w", err)
	}
	d.say("prompt_cancel -> cancelled=%v", pc.Cancelled)
	o := <-done
	var pe *contracts.ProtocolError
	switch {
	case errors.As(o.err, &pe):
		d.say("the original prompt_send -> JSON-RPC error %d %q after %s", pe.Code, pe.Message, time.Since(cancelStart).Round(time.Millisecond))
	case o.err != nil:
		return fmt.Errorf("cancelled prompt_send: %w", o.err)
	default:
		return fmt.Errorf("cancelled prompt_send returned a result: %+v", o.res)
	}
	again, err := c.PromptCancel(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("prompt_cancel: %w", err)
	}
	d.say("prompt_cancel again -> cancelled=%v (nothing is running)", again.Cancelled)
	return nil
}
