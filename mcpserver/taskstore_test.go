package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// memTasks is an in-memory sessions.TaskStore for tests. It keeps the
// contract's compare-and-set rules: CancelTask and CommitTask decide under
// one mutex, so exactly one of them wins; every client-facing method
// answers ErrNotFound for another client's task and for an expired one.
type memTasks struct {
	now func() time.Time

	mu    sync.Mutex
	tasks map[string]*sessions.Task
	// writes logs every write that changed a task, as "<method> <id>".
	writes []string
}

// wrote logs a write of method to task id; m.mu is held.
func (m *memTasks) wrote(method, id string) { m.writes = append(m.writes, method+" "+id) }

// writesOf returns the writes to task id, in order, without RenewTask's
// (the lease keeper's, every 2 s, off a task's answer path).
func (m *memTasks) writesOf(id string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, w := range m.writes {
		method, task, _ := strings.Cut(w, " ")
		if task == id && method != "RenewTask" {
			out = append(out, method)
		}
	}
	return out
}

func newMemTasks(now func() time.Time) *memTasks {
	return &memTasks{now: now, tasks: map[string]*sessions.Task{}}
}

func terminal(status string) bool { return status != sessions.TaskWorking }

func (m *memTasks) expired(t *sessions.Task) bool {
	return terminal(t.Status) && !m.now().Before(t.CreatedAt.Add(t.TTL))
}

func (m *memTasks) visible(clientID, id string) (*sessions.Task, error) {
	t := m.tasks[id]
	if t == nil || t.ClientID != clientID || m.expired(t) {
		return nil, fmt.Errorf("task %q: %w", id, sessions.ErrNotFound)
	}
	return t, nil
}

func (m *memTasks) CreateTask(_ context.Context, n sessions.NewTask) (sessions.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n.ID == "" || n.ClientID == "" || n.TTL <= 0 || !json.Valid(n.Request) {
		return sessions.Task{}, fmt.Errorf("create task: invalid input")
	}
	if m.tasks[n.ID] != nil {
		return sessions.Task{}, sessions.ErrExists
	}
	if len(n.Request) > sessions.MaxTaskPayload {
		return sessions.Task{}, sessions.ErrTaskTooLarge
	}
	if n.MaxWorking > 0 {
		working := 0
		for _, t := range m.tasks {
			if t.ClientID == n.ClientID && t.Status == sessions.TaskWorking {
				working++
			}
		}
		if working >= n.MaxWorking {
			return sessions.Task{}, sessions.ErrTaskLimit
		}
	}
	now := m.now()
	if n.Runner != "" && n.Lease <= 0 {
		return sessions.Task{}, fmt.Errorf("create task: invalid runner lease")
	}
	t := &sessions.Task{ID: n.ID, ClientID: n.ClientID, Status: sessions.TaskWorking, Request: n.Request, CreatedAt: now, UpdatedAt: now, TTL: n.TTL}
	if n.Runner != "" {
		t.Runner, t.RunnerExpiresAt = n.Runner, now.Add(n.Lease)
	}
	m.tasks[n.ID] = t
	m.wrote("CreateTask", n.ID)
	return *t, nil
}

func (m *memTasks) GetTask(_ context.Context, clientID, id string) (sessions.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.visible(clientID, id)
	if err != nil {
		return sessions.Task{}, err
	}
	return *t, nil
}

func (m *memTasks) ListTasks(_ context.Context, clientID, cursor string, limit int) (sessions.TaskPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if limit <= 0 {
		limit = sessions.DefaultTaskPage
	}
	var all []sessions.Task
	for _, t := range m.tasks {
		if t.ClientID == clientID && !m.expired(t) {
			c := *t
			c.Request, c.Result, c.Progress = nil, nil, nil
			all = append(all, c)
		}
	}
	slices.SortFunc(all, func(a, b sessions.Task) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	start := 0
	if cursor != "" {
		after, ok := strings.CutPrefix(cursor, "after:")
		i := slices.IndexFunc(all, func(t sessions.Task) bool { return t.ID == after })
		if !ok || i < 0 {
			return sessions.TaskPage{}, sessions.ErrInvalidCursor
		}
		start = i + 1
	}
	page := sessions.TaskPage{}
	end := min(start+limit, len(all))
	page.Tasks = all[start:end]
	if end < len(all) {
		page.Next = "after:" + all[end-1].ID
	}
	return page, nil
}

func (m *memTasks) CancelTask(_ context.Context, clientID, id string) (sessions.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, err := m.visible(clientID, id)
	if err != nil {
		return sessions.Task{}, err
	}
	if t.Status != sessions.TaskWorking || t.Committing {
		return *t, sessions.ErrTaskDone
	}
	t.Status, t.UpdatedAt = sessions.TaskCancelled, m.now()
	m.wrote("CancelTask", id)
	return *t, nil
}

func (m *memTasks) ClaimTask(_ context.Context, id, runner string, ttl time.Duration) (sessions.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tasks[id]
	switch {
	case t == nil:
		return sessions.Task{}, sessions.ErrNotFound
	case terminal(t.Status) || t.Committing:
		return *t, sessions.ErrTaskDone
	case t.Runner != "" && t.Runner != runner && m.now().Before(t.RunnerExpiresAt):
		return *t, sessions.ErrBusy
	}
	t.Runner, t.RunnerExpiresAt = runner, m.now().Add(ttl)
	m.wrote("ClaimTask", id)
	return *t, nil
}

func (m *memTasks) RenewTask(_ context.Context, id, runner string, ttl time.Duration, progress json.RawMessage) (sessions.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tasks[id]
	if t == nil || t.Runner != runner {
		return sessions.Task{}, sessions.ErrLeaseLost
	}
	t.RunnerExpiresAt = m.now().Add(ttl)
	m.wrote("RenewTask", id)
	if progress != nil && t.Status == sessions.TaskWorking {
		t.Progress, t.UpdatedAt = progress, m.now()
	}
	return *t, nil
}

func (m *memTasks) CommitTask(_ context.Context, id, runner string) (sessions.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tasks[id]
	switch {
	case t == nil:
		return sessions.Task{}, sessions.ErrNotFound
	case terminal(t.Status):
		return *t, sessions.ErrTaskDone
	case t.Runner != runner || !m.now().Before(t.RunnerExpiresAt):
		return *t, sessions.ErrLeaseLost
	}
	t.Committing = true
	m.wrote("CommitTask", id)
	return *t, nil
}

func (m *memTasks) FinishTask(_ context.Context, id, runner, status, message string, result json.RawMessage) (sessions.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tasks[id]
	switch {
	case t == nil:
		return sessions.Task{}, sessions.ErrNotFound
	case terminal(t.Status), t.Committing && status == sessions.TaskCancelled:
		return *t, sessions.ErrTaskDone
	case t.Runner != runner:
		return *t, sessions.ErrLeaseLost
	}
	if len(result) > sessions.MaxTaskPayload {
		return *t, sessions.ErrTaskTooLarge
	}
	t.Status, t.StatusMessage, t.Result, t.UpdatedAt = status, message, result, m.now()
	m.wrote("FinishTask", id)
	return *t, nil
}

func (m *memTasks) FailAbandonedTasks(_ context.Context, message string, result json.RawMessage, unclaimed time.Duration) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, now := 0, m.now()
	for _, t := range m.tasks {
		if t.Status != sessions.TaskWorking {
			continue
		}
		lapsed := t.Runner != "" && !now.Before(t.RunnerExpiresAt) && !t.Committing
		never := t.Runner == "" && !now.Before(t.CreatedAt.Add(unclaimed))
		if lapsed || never {
			t.Status, t.StatusMessage, t.Result, t.UpdatedAt = sessions.TaskFailed, message, result, now
			n++
		}
	}
	return n, nil
}

func (m *memTasks) AbandonedCommits(_ context.Context, limit int) ([]sessions.Task, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []sessions.Task
	for _, t := range m.tasks {
		if t.Status == sessions.TaskWorking && t.Committing && !m.now().Before(t.RunnerExpiresAt) {
			out = append(out, *t)
		}
	}
	slices.SortFunc(out, func(a, b sessions.Task) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out[:min(len(out), limit)], nil
}

func (m *memTasks) PurgeExpiredTasks(context.Context) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, t := range m.tasks {
		if m.expired(t) {
			delete(m.tasks, id)
			n++
		}
	}
	return n, nil
}

// raw returns task id whatever its client, for assertions.
func (m *memTasks) raw(id string) (sessions.Task, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.tasks[id]
	if t == nil {
		return sessions.Task{}, false
	}
	return *t, true
}

var _ sessions.TaskStore = (*memTasks)(nil)
