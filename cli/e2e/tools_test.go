//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/contracts"
)

var sessionIDPattern = regexp.MustCompile(`^mcp_[0-9a-f]{32}$`)

// firstPrompt has non-ASCII and HTML-special text: payloads keep UTF-8 and
// never HTML-escape (canonical checks the exact encoding). The session
// title is its first line.
const (
	firstPrompt = "Hello <b>there</b> & grüße, 世界 🎉\nsecond line"
	firstTitle  = "Hello <b>there</b> & grüße, 世界 🎉"
)

// TestToolMappings: each of the six tools answers with its fixed shape
// (one TextContent of canonical JSON with exactly the contract's keys);
// an unknown wrapper tool is -32601; invalid wrapper arguments are -32602
// "invalid arguments at <path>: <keyword>"; prompt_send with an unknown
// session_id is -32602 "invalid MCP prompt session" and creates nothing.
func TestToolMappings(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, func(t *testing.T, backend string) {
		in := e2etest.NewInstall(t, backend)
		in.SetJSON("mcp_server.exposed_tools", []string{"memory_status", "memory_update", "memory_search"})
		in.Script(
			e2etest.Say("first answer"),
			e2etest.Say("second answer"),
			e2etest.Failing(),
		)
		ctx := e2etest.Ctx(t)
		c := in.Serve(nil)
		start := time.Now().Unix()

		// sessions_list on an empty store.
		if text := e2etest.TextOf(t, e2etest.CallResult(t, ctx, c, contracts.SessionsList, nil)); text != "[]" {
			t.Errorf("sessions_list on an empty store = %q, want []", text)
		}

		// prompt_send without session_id creates mcp_<32 hex>.
		res := e2etest.CallResult(t, ctx, c, contracts.PromptSend, map[string]any{"prompt": firstPrompt})
		first := promptPayload(t, res)
		if !sessionIDPattern.MatchString(first.SessionID) || first.Text != "[scripted] first answer" || first.Failed || first.AssistantMsgID == "" {
			t.Errorf("prompt_send (new session) = %+v, want a new mcp_<32 hex> session and the first answer", first)
		}
		sid := first.SessionID
		var listed []map[string]any
		for line := range strings.SplitSeq(strings.TrimSpace(in.MustRun("sessions", "list", "--json")), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("sessions list --json line %q: %v", line, err)
			}
			listed = append(listed, m)
		}
		if len(listed) != 1 || listed[0]["id"] != sid || listed[0]["agent_id"] != "main" || listed[0]["source"] != "mcp" || listed[0]["title"] != firstTitle {
			t.Errorf("stored sessions = %v, want %s with agent main, source mcp, title %q", listed, sid, firstTitle)
		}

		// prompt_send with session_id continues it.
		res = e2etest.CallResult(t, ctx, c, contracts.PromptSend, map[string]any{"prompt": "and again", "session_id": sid})
		second := promptPayload(t, res)
		if second.SessionID != sid || second.Text != "[scripted] second answer" || second.Failed || second.AssistantMsgID == first.AssistantMsgID {
			t.Errorf("prompt_send (existing session) = %+v, want session %s and the second answer", second, sid)
		}

		// A turn whose model fails is a normal result with failed:true.
		res = e2etest.CallResult(t, ctx, c, contracts.PromptSend, map[string]any{"prompt": "fail please", "session_id": sid})
		failed := promptPayload(t, res)
		if !failed.Failed || failed.SessionID != sid || failed.AssistantMsgID == "" {
			t.Errorf("prompt_send with a failing model = %+v, want failed:true as a normal result", failed)
		}

		// sessions_list: [{id, title, updated_at}].
		v := e2etest.Canonical(t, e2etest.TextOf(t, e2etest.CallResult(t, ctx, c, contracts.SessionsList, nil)))
		list, _ := v.([]any)
		if len(list) != 1 {
			t.Fatalf("sessions_list = %v, want one session", v)
		}
		if got := e2etest.Keys(t, list[0]); !slices.Equal(got, []string{"id", "title", "updated_at"}) {
			t.Errorf("sessions_list entry keys = %v, want [id title updated_at]", got)
		}
		entry := list[0].(map[string]any)
		if entry["id"] != sid || entry["title"] != firstTitle {
			t.Errorf("sessions_list entry = %v, want id %s title %q", entry, sid, firstTitle)
		}
		checkUnixSeconds(t, "updated_at", entry["updated_at"], start)

		// session_get: the branch, root first, [{id, role, content, timestamp}].
		v = e2etest.Canonical(t, e2etest.TextOf(t, e2etest.CallResult(t, ctx, c, contracts.SessionGet, map[string]any{"session_id": sid})))
		msgs, _ := v.([]any)
		var roles, contents []string
		for _, m := range msgs {
			if got := e2etest.Keys(t, m); !slices.Equal(got, []string{"content", "id", "role", "timestamp"}) {
				t.Errorf("session_get message keys = %v, want [content id role timestamp]", got)
			}
			mm := m.(map[string]any)
			roles = append(roles, mm["role"].(string))
			contents = append(contents, mm["content"].(string))
			checkUnixSeconds(t, "timestamp", mm["timestamp"], start)
		}
		wantRoles := []string{"user", "assistant", "user", "assistant", "user", "assistant"}
		if !slices.Equal(roles, wantRoles) {
			t.Errorf("session_get roles = %v, want %v", roles, wantRoles)
		}
		if len(contents) == 6 && (contents[0] != firstPrompt || contents[1] != "[scripted] first answer" ||
			contents[2] != "and again" || contents[3] != "[scripted] second answer") {
			t.Errorf("session_get contents = %q", contents)
		}
		if len(msgs) == 6 {
			if id := msgs[3].(map[string]any)["id"]; id != second.AssistantMsgID {
				t.Errorf("session_get message 3 id = %v, want prompt_send's assistant_msg_id %s", id, second.AssistantMsgID)
			}
		}

		// prompt_cancel with nothing running.
		v = e2etest.Canonical(t, e2etest.TextOf(t, e2etest.CallResult(t, ctx, c, contracts.PromptCancel, map[string]any{"session_id": sid})))
		if diff := cmp.Diff(map[string]any{"session_id": sid, "cancelled": false}, v); diff != "" {
			t.Errorf("prompt_cancel of an idle session (-want +got):\n%s", diff)
		}

		// tools_list.
		v = e2etest.Canonical(t, e2etest.TextOf(t, e2etest.CallResult(t, ctx, c, contracts.ToolsList, nil)))
		var names []string
		for _, e := range v.([]any) {
			names = append(names, e.(map[string]any)["name"].(string))
		}
		if want := []string{"memory_status", "memory_update", "memory_search"}; !slices.Equal(names, want) {
			t.Errorf("tools_list names = %v, want %v", names, want)
		}

		// tool_call passes the runtime tool's content through; missing and
		// null arguments mean {}.
		before := e2etest.MemorySources(t, ctx, c.Client)
		res = e2etest.CallResult(t, ctx, c, contracts.ToolCall, map[string]any{"name": "memory_update",
			"arguments": map[string]any{"path": "notes/e2e", "content": "the e2e note about otters"}})
		if res.IsError {
			t.Fatalf("tool_call memory_update isError: %s", e2etest.TextOf(t, res))
		}
		var upd map[string]any
		if err := json.Unmarshal([]byte(e2etest.TextOf(t, res)), &upd); err != nil || upd["path"] != "notes/e2e" {
			t.Errorf("tool_call memory_update = %s, want the tool's own JSON (%v)", e2etest.TextOf(t, res), err)
		}
		if after := e2etest.MemorySources(t, ctx, c.Client); after != before+1 {
			t.Errorf("memory sources %v -> %v after memory_update, want +1", before, after)
		}
		for _, args := range []map[string]any{{"name": "memory_status"}, {"name": "memory_status", "arguments": nil}} {
			if res := e2etest.CallResult(t, ctx, c, contracts.ToolCall, args); res.IsError {
				t.Errorf("tool_call %v isError: %s", args, e2etest.TextOf(t, res))
			}
		}
		res = e2etest.CallResult(t, ctx, c, contracts.ToolCall, map[string]any{"name": "memory_search", "arguments": map[string]any{"query": "otters"}})
		if text := e2etest.TextOf(t, res); res.IsError || !strings.Contains(text, "notes/e2e") {
			t.Errorf("tool_call memory_search = %s, want a hit on notes/e2e", text)
		}

		// Protocol errors.
		if e := e2etest.RPCError(t, ctx, c, "no_such_wrapper", map[string]any{}); e.Code != jsonrpc.CodeMethodNotFound {
			t.Errorf("unknown wrapper tool: code %d %q, want -32601", e.Code, e.Message)
		}
		for _, tc := range []struct {
			tool string
			args any
			want string
		}{
			{contracts.SessionGet, map[string]any{}, "invalid arguments at $.session_id: required"},
			{contracts.SessionGet, map[string]any{"session_id": ""}, "invalid arguments at $.session_id: minLength"},
			{contracts.SessionGet, map[string]any{"session_id": " \t "}, "invalid arguments at $.session_id: pattern"},
			{contracts.SessionGet, map[string]any{"session_id": 5}, "invalid arguments at $.session_id: type"},
			{contracts.SessionsList, map[string]any{"x": 1}, "invalid arguments at $.x: additionalProperties"},
			{contracts.PromptSend, map[string]any{"prompt": "hi", "extra": true}, "invalid arguments at $.extra: additionalProperties"},
			{contracts.PromptSend, map[string]any{"prompt": "hi", "session_id": ""}, "invalid arguments at $.session_id: minLength"},
			{contracts.PromptCancel, map[string]any{"session_id": []any{"x"}}, "invalid arguments at $.session_id: type"},
			{contracts.ToolCall, map[string]any{}, "invalid arguments at $.name: required"},
			{contracts.ToolCall, map[string]any{"name": "memory_status", "arguments": "x"}, "invalid arguments at $.arguments: type"},
			{contracts.ToolsList, []any{1}, "invalid arguments at $: type"},
		} {
			e := e2etest.RPCError(t, ctx, c, tc.tool, tc.args)
			if e.Code != jsonrpc.CodeInvalidParams || e.Message != tc.want {
				t.Errorf("%s %v: error %d %q, want -32602 %q", tc.tool, tc.args, e.Code, e.Message, tc.want)
			}
		}

		// prompt_send on an unknown session: -32602 and nothing created.
		unknown := "mcp_00000000000000000000000000000000"
		e := e2etest.RPCError(t, ctx, c, contracts.PromptSend, map[string]any{"prompt": "hi", "session_id": unknown})
		if e.Code != jsonrpc.CodeInvalidParams || e.Message != contracts.TextInvalidPromptSession {
			t.Errorf("prompt_send on an unknown session: %d %q, want -32602 %q", e.Code, e.Message, contracts.TextInvalidPromptSession)
		}
		var te *contracts.ToolError
		if _, err := c.Client.SessionGet(ctx, unknown); !errors.As(err, &te) || te.Payload == nil || *te.Payload != (contracts.ErrorPayload{Error: contracts.TextSessionNotFound}) {
			t.Errorf("session_get of the unknown session = %v, want isError {\"error\":%q}", err, contracts.TextSessionNotFound)
		} else if te.Text != `{"error":"session not found"}` {
			t.Errorf("session_get of an unknown session text = %q, want {\"error\":\"session not found\"}", te.Text)
		}
		if list, err := c.Client.SessionsList(ctx); err != nil || len(list) != 1 {
			t.Errorf("sessions_list after the refused prompt_send = %v, %v; want still one session", list, err)
		}
		c.Close()
		in.VerifyAudit()
	})
}

// promptPayload decodes a prompt_send result, requiring the fixed shape.
func promptPayload(t *testing.T, res *mcp.CallToolResult) contracts.PromptSendResult {
	t.Helper()
	text := e2etest.TextOf(t, res)
	if res.IsError {
		t.Fatalf("prompt_send isError: %s", text)
	}
	v := e2etest.Canonical(t, text)
	if got := e2etest.Keys(t, v); !slices.Equal(got, []string{"assistant_msg_id", "failed", "session_id", "text"}) {
		t.Errorf("prompt_send keys = %v, want [assistant_msg_id failed session_id text]", got)
	}
	var p contracts.PromptSendResult
	if err := contracts.DecodePayload(text, &p); err != nil {
		t.Fatalf("decode prompt_send %q: %v", text, err)
	}
	return p
}

// checkUnixSeconds requires v to be an integer JSON number of Unix seconds
// between start and now.
func checkUnixSeconds(t *testing.T, what string, v any, start int64) {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Errorf("%s = %v (%T), want a JSON number", what, v, v)
		return
	}
	sec, err := n.Int64()
	if err != nil || sec < start-1 || sec > time.Now().Unix()+1 {
		t.Errorf("%s = %s, want Unix seconds in [%d, now]", what, n, start)
	}
}

// TestRuntimeToolGate: unknown, exposed-but-unregistered and
// registered-but-unexposed names are indistinguishable (byte-identical
// -32601 error objects); invalid runtime arguments are -32602; gate denials
// are isError with the fixed texts and the tool never ran.
func TestRuntimeToolGate(t *testing.T) {
	t.Parallel()
	e2etest.ForBackends(t, func(t *testing.T, backend string) {
		in := e2etest.NewInstall(t, backend)
		work := filepath.Join(in.Root, "work")
		if err := os.Mkdir(work, 0o700); err != nil {
			t.Fatal(err)
		}
		readable := filepath.Join(work, "readable.txt")
		if err := os.WriteFile(readable, []byte("secret-ish content"), 0o600); err != nil {
			t.Fatal(err)
		}
		in.SetJSON("agent.work_dirs", []string{work})
		in.SetJSON("mcp_server.exposed_tools", []string{"memory_search", "memory_update", "memory_status", "nope", "bash", "read", "write"})
		in.SetJSON("tools.permission_rules", []map[string]string{
			{"tool": "memory_search", "action": "deny"},
			{"tool": "memory_update", "action": "ask"},
		})
		ctx := e2etest.Ctx(t)
		c := in.Serve(nil)

		// Not found, all alike.
		var errs []json.RawMessage
		for _, name := range []string{"nope", "memory_get", "todo_list", "no_such_tool_anywhere"} {
			e := e2etest.RPCError(t, ctx, c, contracts.ToolCall, map[string]any{"name": name, "arguments": map[string]any{"path": "x"}})
			if e.Code != jsonrpc.CodeMethodNotFound || e.Message != contracts.TextRuntimeToolNotFound {
				t.Errorf("tool_call %s: %d %q, want -32601 %q", name, e.Code, e.Message, contracts.TextRuntimeToolNotFound)
			}
			errs = append(errs, e2etest.ErrorObject(t, c.WaitResponse(c.LastCallTo(contracts.ToolCall).ID())))
		}
		for i := 1; i < len(errs); i++ {
			if !bytes.Equal(errs[0], errs[i]) {
				t.Errorf("-32601 error objects differ on the wire: %s vs %s", errs[0], errs[i])
			}
		}

		// Invalid arguments for the runtime tool's own schema.
		e := e2etest.RPCError(t, ctx, c, contracts.ToolCall, map[string]any{"name": "memory_status", "arguments": map[string]any{"bogus": 1}})
		if e.Code != jsonrpc.CodeInvalidParams || e.Message != contracts.TextInvalidRuntimeToolArguments {
			t.Errorf("tool_call memory_status {bogus}: %d %q, want -32602 %q", e.Code, e.Message, contracts.TextInvalidRuntimeToolArguments)
		}

		marker := filepath.Join(work, "bash-ran")
		before := e2etest.MemorySources(t, ctx, c.Client)
		for _, tc := range []struct {
			name string
			args map[string]any
			want string
		}{
			{"bash", map[string]any{"command": "touch " + marker}, contracts.TextDeniedHardConstraint},
			{"write", map[string]any{"path": filepath.Join(work, "written.txt"), "content": "x"}, contracts.TextDeniedCapabilityPrefix + "fs.write"},
			{"read", map[string]any{"path": readable}, contracts.TextDeniedCapabilityPrefix + "fs.read"},
			{"memory_search", map[string]any{"query": "anything"}, contracts.TextDeniedPermissionRule},
			{"memory_update", map[string]any{"path": "notes/denied", "content": "must not be stored"}, contracts.TextDeniedApprovalUnavailable},
		} {
			res := e2etest.CallResult(t, ctx, c, contracts.ToolCall, map[string]any{"name": tc.name, "arguments": tc.args})
			if !res.IsError || len(res.Content) != 1 || e2etest.TextOf(t, res) != tc.want {
				t.Errorf("tool_call %s = isError %v %v, want isError with exactly %q", tc.name, res.IsError, res.Content, tc.want)
			}
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("bash ran although denied: %s exists (%v)", marker, err)
		}
		if _, err := os.Stat(filepath.Join(work, "written.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("write ran although denied (%v)", err)
		}
		if after := e2etest.MemorySources(t, ctx, c.Client); after != before {
			t.Errorf("memory sources %v -> %v after a denied memory_update, want unchanged", before, after)
		}
		c.Close()

		var codes []string
		for _, r := range e2etest.AuditOf(in.Audit(), "mcp.tool.denied") {
			p := r.PayloadMap(t)
			codes = append(codes, p["tool"].(string)+":"+p["reason_code"].(string))
			if p["client_id"] != in.ClientID {
				t.Errorf("mcp.tool.denied client_id = %v, want %s", p["client_id"], in.ClientID)
			}
		}
		want := []string{"bash:HARD_CONSTRAINT_DENIED", "write:AUTHORITY_CAPABILITY_DENIED", "read:AUTHORITY_CAPABILITY_DENIED",
			"memory_search:PERMISSION_RULE_DENY", "memory_update:APPROVAL_UNAVAILABLE_NON_INTERACTIVE"}
		if diff := cmp.Diff(want, codes); diff != "" {
			t.Errorf("mcp.tool.denied audit (-want +got):\n%s", diff)
		}
	})
}
