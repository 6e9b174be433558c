//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/schemacheck"
	"github.com/openprogram/openprogram/runtime/builtin/memory"
)

// TestClientInfoChangesNothing: a valid token initializes at 2025-11-25 as
// serverInfo openprogram with the tools capability only, and two clients
// that differ only in clientInfo name and version see the same tools, the
// same results and the same client id (audit).
func TestClientInfoChangesNothing(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, func(t *testing.T, backend string) {
		in := e2etest.NewInstall(t, backend)
		in.SetJSON("mcp_server.exposed_tools", []string{"memory_status", "memory_search"})
		in.Script(e2etest.Say("the same answer for everyone"))

		type observed struct {
			Protocol, ServerName, ServerVersion string
			Capabilities                        []string
			Tools                               any
			RuntimeTools                        []contracts.RuntimeTool
			Status                              string
			Prompt                              contracts.PromptSendResult
			Branch                              []contracts.Message
		}
		session := func(name, version string) observed {
			ctx := e2etest.Ctx(t)
			c := in.Serve(&e2etest.ConnOptions{ClientName: name, ClientVersion: version, ProtocolVersion: "2025-11-25"})
			var o observed
			ir := c.Session.InitializeResult()
			o.Protocol, o.ServerName, o.ServerVersion = ir.ProtocolVersion, ir.ServerInfo.Name, ir.ServerInfo.Version
			initResp, ok := e2etest.ResponseTo(c.Out.Frames(), c.Sent.Frames()[0].ID())
			if !ok {
				t.Fatal("no initialize response on stdout")
			}
			var res struct {
				Capabilities map[string]json.RawMessage `json:"capabilities"`
			}
			if err := json.Unmarshal(initResp.Members["result"], &res); err != nil {
				t.Fatalf("initialize result %s: %v", initResp.Members["result"], err)
			}
			for k := range res.Capabilities {
				o.Capabilities = append(o.Capabilities, k)
			}
			slices.Sort(o.Capabilities)

			lt, err := c.Session.ListTools(ctx, nil)
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			data, err := json.Marshal(lt.Tools)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &o.Tools); err != nil {
				t.Fatal(err)
			}
			if o.RuntimeTools, err = c.Client.ToolsList(ctx); err != nil {
				t.Fatalf("tools_list: %v", err)
			}
			content, err := c.Client.ToolCall(ctx, "memory_status", nil)
			if err != nil {
				t.Fatalf("tool_call memory_status: %v", err)
			}
			o.Status = e2etest.OnlyText(t, content)
			if o.Prompt, err = c.Client.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "who am I?"}); err != nil {
				t.Fatalf("prompt_send: %v", err)
			}
			if o.Branch, err = c.Client.SessionGet(ctx, o.Prompt.SessionID); err != nil {
				t.Fatalf("session_get: %v", err)
			}
			c.Close()
			// Ids and times differ between the two sessions by design.
			o.Prompt.SessionID, o.Prompt.AssistantMsgID = "", ""
			for i := range o.Branch {
				o.Branch[i].ID, o.Branch[i].Timestamp = "", 0
			}
			return o
		}
		a := session("alpha-client", "1.0.0")
		b := session("Zeta Other Client", "99.1.0-rc.1+build")

		want := observed{Protocol: "2025-11-25", ServerName: "openprogram", ServerVersion: "e2e-test", Capabilities: []string{"tasks", "tools"}}
		if a.Protocol != want.Protocol || a.ServerName != want.ServerName || a.ServerVersion != want.ServerVersion ||
			!slices.Equal(a.Capabilities, want.Capabilities) {
			t.Errorf("initialize = protocol %q server %q %q capabilities %v, want %q %q %q %v",
				a.Protocol, a.ServerName, a.ServerVersion, a.Capabilities, want.Protocol, want.ServerName, want.ServerVersion, want.Capabilities)
		}
		if a.Prompt.Text != "[scripted] the same answer for everyone" || a.Prompt.Failed {
			t.Errorf("prompt_send = %+v, want the scripted answer", a.Prompt)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("what a client sees depends on its clientInfo (-alpha +zeta):\n%s", diff)
		}

		recs := in.Audit()
		for _, typ := range []string{"mcp.server.start", "mcp.server.stop", "mcp.prompt.completed"} {
			got := e2etest.AuditOf(recs, typ)
			if len(got) != 2 {
				t.Errorf("%d %s audit records, want one per connection (2)", len(got), typ)
			}
			for _, r := range got {
				if id := r.PayloadMap(t)["client_id"]; id != in.ClientID || r.Origin != "mcp/"+in.ClientID {
					t.Errorf("%s: client_id %v origin %q, want %s and mcp/%s for both clients", typ, id, r.Origin, in.ClientID, in.ClientID)
				}
			}
		}
		for _, r := range e2etest.AuditOf(recs, "mcp.server.start") {
			if diff := cmp.Diff(map[string]any{"client_id": in.ClientID, "version": "e2e-test"}, r.PayloadMap(t)); diff != "" {
				t.Errorf("mcp.server.start payload (-want +got):\n%s", diff)
			}
		}
		for _, r := range e2etest.AuditOf(recs, "mcp.server.stop") {
			if diff := cmp.Diff(map[string]any{"client_id": in.ClientID, "reason": "eof"}, r.PayloadMap(t)); diff != "" {
				t.Errorf("mcp.server.stop payload (-want +got):\n%s", diff)
			}
		}
		in.VerifyAudit()
	})
}

// TestStockCommandTransport: a stock go-sdk client over the SDK's own
// mcp.CommandTransport, left to its defaults, first tries server/discover
// (2026-07-28), which the server refuses with a JSON-RPC error, then
// initializes at 2025-11-25 and works; closing the session ends the server
// with exit status 0. Every frame the client reads is schema-checked.
func TestStockCommandTransport(t *testing.T) {
	t.Parallel()
	in := e2etest.NewInstall(t, e2etest.SQLite)
	in.SetJSON("mcp_server.exposed_tools", []string{"memory_status"})
	ctx := e2etest.Ctx(t)

	cmd := exec.Command(e2etest.BinPath, "mcp", "serve")
	cmd.Env = in.Env(e2etest.EnvToken + "=" + in.Token)
	var stderr, log e2etest.LockedBuffer
	cmd.Stderr = &stderr
	var mu sync.Mutex
	var violations []string
	transport := schemacheck.Wrap(&mcp.LoggingTransport{
		Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: e2etest.ExitTimeout},
		Writer:    &log,
	}, e2etest.Validator, func(err error) {
		mu.Lock()
		violations = append(violations, err.Error())
		mu.Unlock()
	})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stock", Version: "0"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = cs.Close()
		}
	})
	if got := cs.InitializeResult().ProtocolVersion; got != "2025-11-25" {
		t.Errorf("negotiated protocol = %q, want 2025-11-25", got)
	}
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, contracts.Names()) {
		t.Errorf("tools/list names = %v, want %v", names, contracts.Names())
	}
	if rts, err := contracts.NewClient(cs).ToolsList(ctx); err != nil || len(rts) != 1 || rts[0].Name != "memory_status" {
		t.Errorf("tools_list = %+v, %v; want [memory_status]", rts, err)
	}
	closed = true
	if err := cs.Close(); err != nil {
		t.Errorf("close the session (the server's exit): %v\nstderr:\n%s", err, stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status = %d, want 0", code)
	}
	e2etest.CheckStderr(t, "openprogram mcp serve", stderr.String())
	mu.Lock()
	for _, v := range violations {
		t.Errorf("schema violation: %s", v)
	}
	mu.Unlock()

	// LoggingTransport wrote "write: <frame>" and "read: <frame>" lines.
	var discoverID string
	refused := false
	for line := range strings.SplitSeq(log.String(), "\n") {
		if raw, ok := strings.CutPrefix(line, "write: "); ok {
			if f, err := e2etest.ParseFrame([]byte(raw)); err == nil && f.Method() == "server/discover" {
				discoverID = f.ID()
			}
		}
		if raw, ok := strings.CutPrefix(line, "read: "); ok && discoverID != "" {
			if f, err := e2etest.ParseFrame([]byte(raw)); err == nil && f.IsResponse() && f.ID() == discoverID {
				_, isErr := f.Members["error"]
				_, isResult := f.Members["result"]
				refused = isErr && !isResult
			}
		}
	}
	if discoverID == "" || !refused {
		t.Errorf("server/discover sent %v, refused with a JSON-RPC error %v; want both (log:\n%s)", discoverID != "", refused, log.String())
	}
}

// TestClientConfigNamesTheBinary: client-config from the real binary names
// that binary by its absolute path, symlinks resolved, and never the token.
func TestClientConfigNamesTheBinary(t *testing.T) {
	t.Parallel()
	in := e2etest.NewInstall(t, e2etest.SQLite)
	real, err := filepath.EvalSymlinks(e2etest.BinPath)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(in.Root, "bin", "op-link")
	if err := os.MkdirAll(filepath.Dir(link), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e2etest.BinPath, link); err != nil {
		t.Fatal(err)
	}
	for _, exe := range []string{e2etest.BinPath, link} {
		r := in.RunExe(exe, in.Env(e2etest.EnvToken+"="+in.Token), "mcp", "client-config")
		if r.Code != 0 {
			t.Fatalf("%s mcp client-config: exit %d: %s", exe, r.Code, r.Stderr)
		}
		out := r.Stdout
		body := out // stdout is the JSON document itself, nothing else
		var doc struct {
			MCPServers map[string]struct {
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("client-config output %q: %v", out, err)
		}
		s := doc.MCPServers["openprogram"]
		if s.Command != real || !filepath.IsAbs(s.Command) || !slices.Equal(s.Args, []string{"mcp", "serve"}) {
			t.Errorf("run as %s: command %q args %v, want %q [mcp serve]", exe, s.Command, s.Args, real)
		}
		if s.Env["OPENPROGRAM_HOME"] != in.Home || strings.Contains(out, in.Token) {
			t.Errorf("run as %s: env %v, want OPENPROGRAM_HOME %s and no token", exe, s.Env, in.Home)
		}
	}
}

// TestToolsList: MCP tools/list is always exactly the six frozen tools in
// order, whatever is exposed; the tools_list wrapper returns exposed ∩
// registry ∩ paired tier, in configured order, duplicates dropped.
func TestToolsList(t *testing.T) {
	t.Parallel()
	in := e2etest.NewInstall(t, e2etest.SQLite)
	registry := map[string]contracts.RuntimeTool{}
	for _, tl := range memory.Tools(nil) {
		registry[tl.Name()] = contracts.RuntimeTool{Name: tl.Name(), Description: tl.Description(), InputSchema: tl.InputSchema()}
	}
	var wantSix []any
	data, err := json.Marshal(contracts.Tools())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &wantSix); err != nil {
		t.Fatal(err)
	}
	// Durable tasks are on by default: a tool that may run as a task
	// carries its execution member (prompt_send alone, "optional").
	for _, tl := range wantSix {
		m := tl.(map[string]any)
		if e := contracts.Execution(m["name"].(string)); e != nil {
			m["execution"] = map[string]any{"taskSupport": e.TaskSupport}
		}
	}

	for _, tc := range []struct {
		exposed []string
		want    []string
	}{
		{[]string{"memory_search", "bash", "read", "nope", "memory_search"}, []string{"memory_search"}},
		{[]string{"memory_get", "memory_status", "memory_update", "memory_promote", "write", "todo_list", "memory_get"},
			[]string{"memory_get", "memory_status", "memory_update"}},
		{[]string{}, []string{}},
	} {
		in.SetJSON("mcp_server.exposed_tools", tc.exposed)
		ctx := e2etest.Ctx(t)
		c := in.Serve(nil)

		if _, err := c.Session.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		resp := c.WaitResponse(c.Sent.Frames()[len(c.Sent.Frames())-1].ID())
		var res struct {
			Tools any `json:"tools"`
		}
		if err := json.Unmarshal(resp.Members["result"], &res); err != nil {
			t.Fatalf("tools/list result %s: %v", resp.Members["result"], err)
		}
		if diff := cmp.Diff(wantSix, res.Tools); diff != "" {
			t.Errorf("exposed %q: tools/list on the wire differs from contracts.Tools() (-want +got):\n%s", tc.exposed, diff)
		}

		res2 := e2etest.CallResult(t, ctx, c, contracts.ToolsList, nil)
		text := e2etest.TextOf(t, res2)
		if res2.IsError {
			t.Fatalf("tools_list isError: %s", text)
		}
		v := e2etest.Canonical(t, text)
		for _, e := range v.([]any) {
			if got := e2etest.Keys(t, e); !slices.Equal(got, []string{"description", "inputSchema", "name"}) {
				t.Errorf("tools_list entry keys = %v, want [description inputSchema name]", got)
			}
		}
		var got []contracts.RuntimeTool
		if err := json.Unmarshal([]byte(text), &got); err != nil {
			t.Fatal(err)
		}
		want := []contracts.RuntimeTool{}
		for _, n := range tc.want {
			want = append(want, registry[n])
		}
		if diff := cmp.Diff(want, got, cmp.Comparer(sameJSON)); diff != "" {
			t.Errorf("exposed %q: tools_list (-want +got):\n%s", tc.exposed, diff)
		}
		c.Close()
	}
}

// sameJSON compares two JSON documents by value.
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return cmp.Equal(va, vb)
}

// TestStdoutCarriesOnlyJSONRPC: over a session that exercises turns with
// tool calls and denials, progress, failing and denied tool_calls, every
// line on stdout is a schema-valid JSON-RPC message (conn.check) and the
// diagnostics are on stderr.
func TestStdoutCarriesOnlyJSONRPC(t *testing.T) {
	t.Parallel()
	in := e2etest.NewInstall(t, e2etest.SQLite)
	in.SetJSON("mcp_server.exposed_tools", []string{"memory_update", "memory_status", "bash", "nope"})
	in.Script(
		e2etest.Calls("checking", e2etest.ToolCall("memory_status", nil), e2etest.ToolCall("bash", map[string]any{"command": "echo hi"})),
		e2etest.Say("done"),
	)
	ctx := e2etest.Ctx(t)
	c := in.Serve(nil)
	if _, err := c.Client.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "go"}, contracts.WithProgress(func(float64, string) {})); err != nil {
		t.Fatalf("prompt_send: %v", err)
	}
	var te *contracts.ToolError
	if _, err := c.Client.ToolCall(ctx, "bash", map[string]any{"command": "echo hi"}); !errors.As(err, &te) {
		t.Errorf("tool_call bash = %v, want a denial", err)
	}
	if _, err := c.Client.ToolCall(ctx, "memory_update", map[string]any{"path": "a", "content": "b", "base_revision": 7}); !errors.As(err, &te) || te.Text != contracts.TextRuntimeToolFailed {
		t.Errorf("tool_call memory_update with a stale base_revision = %v, want %q", err, contracts.TextRuntimeToolFailed)
	}
	var pe *contracts.ProtocolError
	if _, err := c.Client.ToolCall(ctx, "nope", nil); !errors.As(err, &pe) {
		t.Errorf("tool_call nope = %v, want a JSON-RPC error", err)
	}
	if err := c.Session.Ping(ctx, nil); err != nil {
		t.Errorf("ping: %v", err)
	}
	c.Close()

	lines, _, _, _ := c.Out.Snapshot()
	if len(lines) < 8 {
		t.Errorf("stdout has %d lines, want the initialize, tool and progress frames", len(lines))
	}
	all := string(joinLines(lines))
	for _, diag := range []string{"level=", "msg=", "mcp.server.start", "mcp serve ready"} {
		if strings.Contains(all, diag) {
			t.Errorf("stdout contains diagnostic text %q", diag)
		}
	}
	if !strings.Contains(c.Stderr.String(), "mcp serve ready") {
		t.Errorf("stderr = %q, want the server's diagnostics", c.Stderr)
	}
}

func joinLines(lines [][]byte) []byte {
	var out []byte
	for _, l := range lines {
		out = append(append(out, l...), '\n')
	}
	return out
}

// TestStdinEOF: when stdin ends, responses already due are still written
// and the server exits 0; a turn that outlives the drain timeout is
// cancelled with reason connection_closed and gets no response.
func TestStdinEOF(t *testing.T) {
	t.Parallel()
	t.Run("pending response is written", func(t *testing.T) {
		t.Parallel()
		in := e2etest.NewInstall(t, e2etest.SQLite)
		in.Script(e2etest.Slowly(4, 100*time.Millisecond))
		c := in.Serve(nil)
		done := promptAsync(e2etest.Ctx(t), c, contracts.PromptSendArgs{Prompt: "finish before you go"})
		req := c.WaitSent(contracts.PromptSend, 1)
		c.CloseStdin()
		if code := c.WaitExit(e2etest.ExitTimeout); code != 0 {
			t.Errorf("exit status after stdin EOF = %d, want 0\nstderr:\n%s", code, c.Stderr)
		}
		o := <-done
		if o.err != nil || o.res.Failed || o.res.Text != "[scripted] w0 w1 w2 w3" {
			t.Errorf("prompt_send pending at EOF = %+v, %v; want its normal result", o.res, o.err)
		}
		if resp, ok := e2etest.ResponseTo(c.Out.Frames(), req.ID()); !ok || resp.Members["result"] == nil {
			t.Errorf("no result on stdout for the request pending at EOF")
		}
		c.Close()
		recs := in.Audit()
		if n := len(e2etest.AuditOf(recs, "mcp.prompt.completed")); n != 1 {
			t.Errorf("%d mcp.prompt.completed records, want 1", n)
		}
		if stops := e2etest.AuditOf(recs, "mcp.server.stop"); len(stops) != 1 || stops[0].PayloadMap(t)["reason"] != "eof" {
			t.Errorf("mcp.server.stop records = %+v, want one with reason eof", stops)
		}
	})
	t.Run("long turn is cancelled with connection_closed", func(t *testing.T) {
		t.Parallel()
		in := e2etest.NewInstall(t, e2etest.SQLite)
		in.Script(e2etest.Slowly(60, 250*time.Millisecond))
		c := in.Serve(nil)
		started := make(chan struct{}, 1)
		done := promptAsync(e2etest.Ctx(t), c, contracts.PromptSendArgs{Prompt: "this takes long"}, contracts.WithProgress(func(_ float64, msg string) {
			if strings.HasPrefix(msg, "assistant is writing") {
				select {
				case started <- struct{}{}:
				default:
				}
			}
		}))
		select {
		case <-started:
		case o := <-done:
			t.Fatalf("the long turn ended before it was seen writing: %+v %v", o.res, o.err)
		case <-time.After(e2etest.TestTimeout):
			t.Fatal("the long turn was never seen writing")
		}
		req := c.LastCallTo(contracts.PromptSend)
		closedAt := time.Now()
		c.CloseStdin()
		if code := c.WaitExit(e2etest.ExitTimeout); code != 0 {
			t.Errorf("exit status after stdin EOF = %d, want 0\nstderr:\n%s", code, c.Stderr)
		}
		if took := time.Since(closedAt); took > 10*time.Second {
			t.Errorf("exit took %s after EOF, want about the 3s drain timeout", took)
		}
		o := <-done
		if o.err == nil {
			t.Errorf("prompt_send cut off by EOF returned a result %+v, want an error", o.res)
		}
		if resp, ok := e2etest.ResponseTo(c.Out.Frames(), req.ID()); ok {
			t.Errorf("the turn cancelled at EOF got a response %s, want none", resp.Raw)
		}
		c.Close()

		recs := in.Audit()
		cancelled := e2etest.AuditOf(recs, "mcp.request.cancelled")
		if len(cancelled) != 1 {
			t.Fatalf("%d mcp.request.cancelled records, want 1: %+v", len(cancelled), recs)
		}
		p := cancelled[0].PayloadMap(t)
		sid, _ := p["session_id"].(string)
		want := map[string]any{"request_id": json.Number(req.ID()), "session_id": sid, "client_id": in.ClientID, "reason": "connection_closed"}
		if diff := cmp.Diff(want, p); diff != "" || sid == "" {
			t.Errorf("mcp.request.cancelled payload (-want +got):\n%s", diff)
		}
		if roles := branchRoles(t, in, sid); !slices.Equal(roles, []string{"user"}) {
			t.Errorf("session %s after the EOF cancel holds %v, want only the user message", sid, roles)
		}
		in.VerifyAudit()
	})
}

// outcome is how an asynchronous prompt_send ended.
type outcome struct {
	res contracts.PromptSendResult
	err error
}

// promptAsync runs prompt_send in a goroutine; the channel delivers once.
func promptAsync(ctx context.Context, c *e2etest.Conn, args contracts.PromptSendArgs, opts ...contracts.CallOption) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		res, err := c.Client.PromptSend(ctx, args, opts...)
		done <- outcome{res, err}
	}()
	return done
}

// branchRoles reads a session's active branch with `openprogram sessions
// show --json` and returns the roles, root first.
func branchRoles(t *testing.T, in *e2etest.Install, sid string) []string {
	t.Helper()
	var roles []string
	for _, m := range sessionShow(t, in, sid) {
		roles = append(roles, m.Role)
	}
	return roles
}

func sessionShow(t *testing.T, in *e2etest.Install, sid string) []contracts.Message {
	t.Helper()
	out := in.MustRun("sessions", "show", "--json", sid)
	var msgs []contracts.Message
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m contracts.Message
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("sessions show --json line %q: %v", line, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// TestSIGTERM: SIGTERM (what mcp.CommandTransport sends a server that does
// not exit after stdin closes) stops the server at once with exit status 0;
// a running turn is cancelled with reason connection_closed and gets no
// response, and the server's stop is audited as cancelled.
func TestSIGTERM(t *testing.T) {
	t.Parallel()
	testSignalEndsTurn(t, syscall.SIGTERM)
}
