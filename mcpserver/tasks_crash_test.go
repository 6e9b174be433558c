package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/storetest"
)

// auditRecords returns st's audit records.
func auditRecords(t *testing.T, st sessions.Store) []sessions.AuditRecord {
	t.Helper()
	if m, ok := st.(*memStore); ok {
		return m.allAudit()
	}
	recs, err := st.TailAudit(t.Context(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A runner killed once its turn's reply is stored (the task working and
// committing, no audit record of the turn's end, no result): the sweep
// finishes the task from the stored reply: completed, with the result
// prompt_send would have answered, and the turn's and the task's end in
// the audit log. No answer tells the client to send the prompt again.
func TestSweepFinishesATaskWhoseRunnerDiedAfterItsReply(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		st := newMemStore(time.Now)
		sweepAfterReply(t, st, newMemTasks(time.Now))
	})
	t.Run("sqlite", func(t *testing.T) {
		st, err := sessions.OpenWith(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "tasks.db"), &sessions.Options{AuditKey: []byte(rand.Text() + rand.Text())})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		sweepAfterReply(t, st, st.(sessions.TaskStore))
	})
}

func sweepAfterReply(t *testing.T, st sessions.Store, ts sessions.TaskStore) {
	const reply = "the reply that was stored"
	dying := &storetest.Dying{Store: st, Tasks: ts}
	te, err := newTaskEnvErr(func(o *TaskOptions) {
		o.Store = dying
		o.Start = func(context.Context, string, string) error { return nil }
	}, func(c *envConfig) {
		c.Store = dying
		withRuntime(t, `{"turns": [{"text": "`+reply+`"}]}`)(c)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	const id, sid = "task_crash", "mcp_crash"
	req := rawParams(taskRequest{RequestID: float64(7), SessionID: sid, NewSession: true, Prompt: "answer me"})
	if _, err := ts.CreateTask(ctx, sessions.NewTask{ID: id, ClientID: testClientID, Request: req, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := te.srv.runTask(ctx, id, "runner-1"); err == nil {
		t.Fatal("the runner that died finished its task")
	}
	before, err := ts.GetTask(ctx, testClientID, id)
	if err != nil || before.Status != sessions.TaskWorking || !before.Committing {
		t.Fatalf("the task of the dead runner = %+v, %v; want working and committing", before, err)
	}
	branch, err := st.Branch(ctx, sid)
	if err != nil || len(branch) == 0 || branch[len(branch)-1].Role != sessions.RoleAssistant {
		t.Fatalf("the session of the dead runner = %+v, %v; want its reply stored", branch, err)
	}
	assistant := branch[len(branch)-1]

	swept, err := SweepTasks(ctx, SweepOptions{Store: ts, Conversations: sweeper(t, st), Speaker: testSpeaker, Unclaimed: time.Hour})
	if err != nil || swept != (SweepResult{Finished: 1}) {
		t.Fatalf("SweepTasks = %+v, %v; want one task finished", swept, err)
	}
	got, err := ts.GetTask(ctx, testClientID, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != sessions.TaskCompleted || got.StatusMessage != "" {
		t.Errorf("the swept task = %s %q, want completed", got.Status, got.StatusMessage)
	}
	var out taskOutcome
	var res mcp.CallToolResult
	if err := json.Unmarshal(got.Result, &out); err != nil || out.Result == nil || json.Unmarshal(out.Result, &res) != nil {
		t.Fatalf("the swept task's result = %s, %v", got.Result, err)
	}
	var payload contracts.PromptSendResult
	if text, ok := res.Content[0].(*mcp.TextContent); !ok || res.IsError || contracts.DecodePayload(text.Text, &payload) != nil {
		t.Fatalf("the swept task's result = %s", out.Result)
	}
	want := contracts.PromptSendResult{SessionID: sid, Text: scripted.Prefix + reply, AssistantMsgID: assistant.ID}
	if payload != want {
		t.Errorf("the swept task's prompt_send result = %+v, want %+v", payload, want)
	}
	var completed, finished []map[string]any
	for _, r := range auditRecords(t, st) {
		var p map[string]any
		if err := json.Unmarshal(r.Payload, &p); err != nil {
			t.Fatal(err)
		}
		switch r.Type {
		case sessions.AuditPromptCompleted:
			completed = append(completed, p)
		case AuditTaskFinished:
			finished = append(finished, p)
		}
	}
	if len(completed) != 1 || completed[0]["task_id"] != id || completed[0]["session_id"] != sid || completed[0]["failed"] != false ||
		completed[0]["request_id"] != float64(7) || completed[0]["client_id"] != testClientID {
		t.Errorf("mcp.prompt.completed records = %v, want one of task %s", completed, id)
	}
	if len(finished) != 1 || finished[0]["task_id"] != id || finished[0]["status"] != sessions.TaskCompleted {
		t.Errorf("mcp.task.finished records = %v, want one of task %s, completed", finished, id)
	}
}

// testSpeaker is the speaker of the client with clientID in these tests.
func testSpeaker(clientID string) (authz.Speaker, error) {
	return authz.NewMCPClient(clientID, testPrincipal, authz.Scope{})
}

// A runner killed at its commit point, before its reply is written: the
// sweep finds no reply and the session free, and fails the task without
// telling the client to send the prompt again.
func TestSweepFailsACommittedTaskWithoutAReply(t *testing.T) {
	st, ts := newMemStore(time.Now), newMemTasks(time.Now)
	dying := &storetest.Dying{Store: st, Tasks: ts, AtCommit: true}
	te, err := newTaskEnvErr(func(o *TaskOptions) {
		o.Store = dying
		o.Start = func(context.Context, string, string) error { return nil }
	}, func(c *envConfig) {
		c.Store = dying
		withRuntime(t, `{"turns": [{"text": "never stored"}]}`)(c)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	req := rawParams(taskRequest{RequestID: "r", SessionID: "mcp_lost", NewSession: true, Prompt: "answer me"})
	if _, err := ts.CreateTask(ctx, sessions.NewTask{ID: "task_lost", ClientID: testClientID, Request: req, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	_ = te.srv.runTask(ctx, "task_lost", "runner-1")
	// The dead runner's session lease lapses too.
	st.mu.Lock()
	clear(st.leases)
	st.mu.Unlock()
	swept, err := SweepTasks(ctx, SweepOptions{Store: ts, Conversations: sweeper(t, st), Speaker: testSpeaker, Unclaimed: time.Hour})
	if err != nil || swept != (SweepResult{Finished: 1}) {
		t.Fatalf("SweepTasks = %+v, %v; want one task finished", swept, err)
	}
	got, _ := ts.raw("task_lost")
	if got.Status != sessions.TaskFailed || got.StatusMessage != TaskReplyLostMessage {
		t.Errorf("the swept task = %s %q, want failed with %q", got.Status, got.StatusMessage, TaskReplyLostMessage)
	}
	if n := len(st.auditOf(sessions.AuditPromptCompleted)); n != 0 {
		t.Errorf("%d mcp.prompt.completed records for a turn that stored no reply", n)
	}
	if f := st.auditOf(AuditTaskFinished); len(f) != 1 || f[0]["status"] != sessions.TaskFailed {
		t.Errorf("mcp.task.finished records = %v, want one, failed", f)
	}
}

// sweeper is the conversation service of the process that sweeps: on the
// store itself, not the dead runner's view of it.
func sweeper(t *testing.T, st sessions.Store) *conversation.Service {
	t.Helper()
	conv, err := conversation.New(conversation.Options{Store: st, Runtime: runtime.New(runtime.Options{Store: st})})
	if err != nil {
		t.Fatal(err)
	}
	return conv
}
