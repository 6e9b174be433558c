package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
	"github.com/openprogram/openprogram/tokenauth"
)

// tasksHost opens a host whose state directory holds a token, with tasks
// on, and returns it with the token's client id.
func tasksHost(t *testing.T) (*host.Host, string) { return tasksHostOn(t, "sqlite") }

// tasksHostOn is tasksHost on backend: "sqlite" (in the state directory)
// or "postgres" (a schema of its own under OPENPROGRAM_TEST_DATABASE_URL).
func tasksHostOn(t *testing.T, backend string) (*host.Host, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(root, "state")
	token, err := tokenauth.Create(tokenauth.Path(state))
	if err != nil {
		t.Fatal(err)
	}
	url := "sqlite:" + filepath.Join(state, "openprogram.db")
	if backend == "postgres" {
		url = pgtest.URL(t, "op_host_tasks")
	}
	cfg := host.Config{StateDir: state, StoreURL: url,
		MCPServer: host.MCPServerConfig{Tasks: host.TasksConfig{Enabled: true, MaxWorking: 4, DefaultTTL: time.Hour, MaxTTL: 24 * time.Hour}}}
	h, err := host.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h, tokenauth.Fingerprint(token)
}

// A task of a client that is no longer the paired one does not run.
func TestRunTaskRefusesAClientNoLongerPaired(t *testing.T) {
	h, clientID := tasksHost(t)
	ts, err := h.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	old := "00000000000000aa"
	if old == clientID {
		t.Fatal("the fixed client id is the token's")
	}
	if _, err := ts.CreateTask(t.Context(), sessions.NewTask{ID: "task-1", ClientID: old, Request: json.RawMessage(`{}`), TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := h.RunTask(t.Context(), old, "task-1", "", nil); !errors.Is(err, host.ErrNotPaired) {
		t.Fatalf("RunTask for a client that is not paired = %v, want ErrNotPaired", err)
	}
	got, err := ts.GetTask(t.Context(), old, "task-1")
	if err != nil || got.Status != sessions.TaskWorking || got.Runner != "" {
		t.Errorf("the task after the refusal = %+v, %v; want it untouched", got, err)
	}
}

// The sweep fails a task whose runner's lease lapsed, with the fixed
// message, and leaves a task with a live lease alone.
func TestSweepTasksFailsAbandonedTasks(t *testing.T) {
	h, clientID := tasksHost(t)
	ts, err := h.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, id := range []string{"lapsed", "live"} {
		if _, err := ts.CreateTask(ctx, sessions.NewTask{ID: id, ClientID: clientID, Request: json.RawMessage(`{}`), TTL: time.Hour}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ts.ClaimTask(ctx, "lapsed", "dead-runner", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.ClaimTask(ctx, "live", "live-runner", time.Hour); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	r, err := h.SweepTasks(ctx)
	if err != nil || r.Failed != 1 {
		t.Fatalf("SweepTasks = %+v, %v; want 1 failed", r, err)
	}
	got, err := ts.GetTask(ctx, clientID, "lapsed")
	if err != nil || got.Status != sessions.TaskFailed || got.StatusMessage != mcpserver.TaskAbandonedMessage {
		t.Errorf("the lapsed task = %+v, %v; want failed with %q", got, err, mcpserver.TaskAbandonedMessage)
	}
	if got, _ := ts.GetTask(ctx, clientID, "live"); got.Status != sessions.TaskWorking {
		t.Errorf("the live task = %+v, want working", got)
	}
}

// With mcp_server.tasks.enabled false the host offers no tasks.
func TestTasksOff(t *testing.T) {
	root := t.TempDir()
	h, err := host.Open(context.Background(), host.Config{StateDir: filepath.Join(root, "state"), StoreURL: "sqlite:" + filepath.Join(root, "db")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Tasks(); !errors.Is(err, host.ErrNoTasks) {
		t.Errorf("Tasks with tasks off = %v, want ErrNoTasks", err)
	}
	// Nor does it sweep: a serve with tasks off writes nothing for them.
	if _, err := h.SweepTasks(t.Context()); !errors.Is(err, host.ErrNoTasks) {
		t.Errorf("SweepTasks with tasks off = %v, want ErrNoTasks", err)
	}
}
