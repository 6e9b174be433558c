//go:build unix

package tasks

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/mcpserver"
)

// A runner SIGKILLed right after its turn's reply is stored, before it
// wrote the turn's record and ended its task (PostgreSQL: the test locks
// the audit writers' table, which every append of a writer chain writes
// its head to, so the runner stops at its next record, the turn's
// mcp.prompt.completed, with the reply committed; the audit_head row no
// writer chain touches would not stop it): once its lease
// lapses, the sweep of a later `mcp serve` finishes the task completed,
// tasks/result answers the stored reply, and the audit log has the turn's
// and the task's end (written before the task ends: a `mcp serve` whose
// client kills it mid-sweep leaves the task to the next sweep). It is
// never failed with "send the prompt again".
func TestTaskOfARunnerKilledAfterItsReply(t *testing.T) {
	t.Parallel()
	in := newInstall(t, "postgres", longTurn)
	var url string
	if err := json.Unmarshal([]byte(in.MustRun("config", "get", "store.url", "--show-secrets")), &url); err != nil {
		t.Fatalf("store.url: %v", err)
	}
	ctx := e2etest.Ctx(t)
	id := in.startTask("work whose runner dies after its reply").Created.TaskID
	pids := in.runners(id)
	if len(pids) != 1 {
		t.Fatalf("runner processes of task %s = %v, want one", id, pids)
	}

	lock, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close(context.Background())
	tx, err := lock.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE audit_writers IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	look, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer look.Close(context.Background())
	in.answer()
	e2etest.Eventually(t, "the runner's reply to be stored", 2*time.Minute, func() bool {
		var n int
		err := look.QueryRow(ctx, `SELECT count(*) FROM messages WHERE role = 'assistant' AND content LIKE '%'||$1||'%'`, slowAnswer).Scan(&n)
		return err == nil && n == 1
	})
	var status string
	var committing bool
	if err := look.QueryRow(ctx, `SELECT status, committing FROM tasks WHERE id = $1`, id).Scan(&status, &committing); err != nil || status != "working" || !committing {
		t.Fatalf("the task with its reply stored = %s (committing %v), %v; want working and committing", status, committing, err)
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		t.Fatalf("kill the runner: %v", err)
	}
	e2etest.Eventually(t, "the killed runner to be gone", time.Minute, func() bool { return len(in.runners(id)) == 0 })
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	got := in.swept(id)
	if got.Status != "completed" || got.StatusMessage == mcpserver.TaskAbandonedMessage {
		t.Fatalf("the task of the runner killed after its reply = %+v, want completed", got)
	}
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	in.step(in.Token, "result", id).ok(t, &res)
	if res.IsError || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, slowAnswer) {
		t.Errorf("tasks/result = %+v, want the stored reply %q", res, slowAnswer)
	}
	var completed, finished int
	for _, r := range in.Audit() {
		p, _ := json.Marshal(r.PayloadMap(t))
		if !strings.Contains(string(p), id) {
			continue
		}
		switch r.Type {
		case "mcp.prompt.completed":
			completed++
		case mcpserver.AuditTaskFinished:
			finished++
		}
	}
	// One of each, or more should a sweeper have been killed between its
	// records and the task's end (the next sweep writes them again).
	if completed < 1 || finished < 1 {
		t.Errorf("the task's records: %d mcp.prompt.completed, %d mcp.task.finished; want one of each", completed, finished)
	}
	in.VerifyAudit()
}
