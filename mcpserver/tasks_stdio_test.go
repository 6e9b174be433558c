package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/mcpserver/schemacheck"
	"github.com/openprogram/openprogram/sessions"
)

// TestTasksOverCommandTransport drives a task through a real server
// process with go-sdk's CommandTransport, sending raw requests (go-sdk's
// client has no task methods): initialize advertises tasks, a
// task-augmented prompt_send answers CreateTaskResult, tasks/get, then
// tasks/result gives the prompt_send result with the related-task _meta,
// tasks/list lists the task. Every frame is checked against the official
// schema, results against their definitions.
func TestTasksOverCommandTransport(t *testing.T) {
	v, err := schemacheck.New()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := serverCommand(t, 3*time.Second, &stderr)
	cmd.Env = append(cmd.Env, runAsServerTasks+"=1")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	conn, err := (&mcp.CommandTransport{Command: cmd}).Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	next := int64(0)
	call := func(method, params, resultDef string) map[string]json.RawMessage {
		t.Helper()
		next++
		id, _ := jsonrpc.MakeID(float64(next))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)}); err != nil {
			t.Fatalf("write %s: %v", method, err)
		}
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("read the answer to %s: %v", method, err)
			}
			data, _ := jsonrpc.EncodeMessage(msg)
			resp, ok := msg.(*jsonrpc.Response)
			if !ok { // a notification (tasks/status): checked, then skipped
				if err := v.ServerFrame(data, ""); err != nil {
					t.Errorf("schema: %v", err)
				}
				continue
			}
			if resp.ID != id {
				t.Fatalf("answer to %v while waiting for %v", resp.ID, id)
			}
			if resp.Error != nil {
				t.Fatalf("%s answered %v", method, resp.Error)
			}
			if err := v.ServerFrame(data, ""); err != nil {
				t.Errorf("schema: %v", err)
			}
			if err := v.Def(resultDef, resp.Result); err != nil {
				t.Errorf("%s result is no %s: %v", method, resultDef, err)
			}
			var out map[string]json.RawMessage
			if err := json.Unmarshal(resp.Result, &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	init := call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`, "InitializeResult")
	if !strings.Contains(string(init["capabilities"]), `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Errorf("capabilities = %s", init["capabilities"])
	}
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	created := call("tools/call", `{"name":"prompt_send","arguments":{"prompt":"hello"},"task":{"ttl":120000}}`, "CreateTaskResult")
	var task taskJSON
	if err := json.Unmarshal(created["task"], &task); err != nil || task.Status != "working" || task.TTL != 120000 || task.PollInterval != 1000 {
		t.Fatalf("CreateTaskResult task = %s", created["task"])
	}
	call("tasks/get", `{"taskId":"`+task.TaskID+`"}`, "GetTaskResult")
	res := call("tasks/result", `{"taskId":"`+task.TaskID+`"}`, "CallToolResult")
	if !strings.Contains(string(res["content"]), `echo: hello`) || !strings.Contains(string(res["_meta"]), `"io.modelcontextprotocol/related-task":{"taskId":"`+task.TaskID+`"}`) {
		t.Errorf("tasks/result = %v", res)
	}
	list := call("tasks/list", `{}`, "ListTasksResult")
	if !strings.Contains(string(list["tasks"]), `"status":"completed"`) {
		t.Errorf("tasks/list = %s", list["tasks"])
	}
	if err := conn.Close(); err != nil && !strings.Contains(err.Error(), "signal") {
		t.Logf("close: %v", err)
	}
	types := auditTypes(auditLines(t, stderr.String()))
	for _, want := range []string{sessions.AuditPromptRequested, AuditTaskCreated, sessions.AuditPromptCompleted, AuditTaskFinished} {
		if !slices.Contains(types, want) {
			t.Errorf("audit %v lacks %s", types, want)
		}
	}
}
