package host_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/storetest"
)

// A task's runner killed right after its turn's reply is stored (the task
// working and committing, no result, neither the turn's nor the task's
// end in the audit log): the host's sweep finishes it from the stored
// reply, completed with prompt_send's result, and writes both records; on
// SQLite and on PostgreSQL.
func TestSweepFinishesATaskWhoseRunnerDiedAfterItsReply(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			h, clientID := tasksHostOn(t, backend)
			crashAfterReply(t, h, clientID)
		})
	}
}

func crashAfterReply(t *testing.T, h *host.Host, clientID string) {
	ctx := t.Context()
	ts, err := h.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	st := h.Conversations().Store()
	const id, sid = "task_crash", "mcp_crash"
	req := json.RawMessage(`{"request_id":7,"session_id":"` + sid + `","new_session":true,"prompt":"answer me"}`)
	if _, err := ts.CreateTask(ctx, sessions.NewTask{ID: id, ClientID: clientID, Request: req, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}

	// The runner, on a store that dies with it once the reply is written.
	dying := &storetest.Dying{Store: st, Tasks: ts}
	script, err := scripted.Parse([]byte(`{"turns": [{"text": "the stored reply"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	conv, err := conversation.New(conversation.Options{Store: dying, Runtime: runtime.New(runtime.Options{Store: dying, Provider: scripted.New(script)})})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := h.MCPClient(clientID)
	if err != nil {
		t.Fatal(err)
	}
	if err := mcpserver.RunTask(ctx, mcpserver.Options{Conversations: conv, Speaker: sp, Tasks: &mcpserver.TaskOptions{Store: dying}}, id, ""); err == nil {
		t.Fatal("the runner that died finished its task")
	}
	before, err := ts.GetTask(ctx, clientID, id)
	if err != nil || before.Status != sessions.TaskWorking || !before.Committing {
		t.Fatalf("the dead runner's task = %+v, %v; want working and committing", before, err)
	}

	r, err := h.SweepTasks(ctx)
	if err != nil || r.Finished != 1 {
		t.Fatalf("SweepTasks = %+v, %v; want one task finished", r, err)
	}
	got, err := ts.GetTask(ctx, clientID, id)
	if err != nil || got.Status != sessions.TaskCompleted || !strings.Contains(string(got.Result), "the stored reply") {
		t.Errorf("the swept task = %s %q %s, %v; want completed with the stored reply", got.Status, got.StatusMessage, got.Result, err)
	}
	recs, err := st.TailAudit(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, rec := range recs {
		if strings.Contains(string(rec.Payload), id) {
			counts[rec.Type]++
		}
	}
	if counts[sessions.AuditPromptCompleted] != 1 || counts[mcpserver.AuditTaskFinished] != 1 {
		t.Errorf("the task's records = %v, want one mcp.prompt.completed and one mcp.task.finished", counts)
	}
	if rep, err := st.VerifyAudit(ctx, nil); err != nil || !rep.OK {
		t.Errorf("audit verify after the sweep = %+v, %v", rep, err)
	}
}
