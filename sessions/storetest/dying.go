package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// ErrDead is what every write through a [Dying] store answers once its
// process is gone.
var ErrDead = errors.New("storetest: the process is gone")

// Dying is a session and task store as a durable task's runner sees it
// when it is killed right after its turn's reply is stored (an
// AppendMessages holding an assistant message): that write goes through,
// then the process is gone: none of its later writes (the audit records,
// the task's end, its lease renewals, the release of the session) reaches
// the store, and its task lease lapses at once, as it would once nobody
// renews it. Reads still go through. Make one with &Dying{Store: st,
// Tasks: ts} over the real stores; the sweep uses those.
type Dying struct {
	sessions.Store
	// Tasks is the task store the runner uses.
	Tasks sessions.TaskStore
	// AtCommit kills the runner right after its task's commit point
	// (CommitTask) instead, before the reply is written.
	AtCommit bool

	mu           sync.Mutex
	dead         bool
	task, runner string
}

// die stops the runner: its task lease lapses, nobody renews it any more.
func (d *Dying) die(ctx context.Context) {
	d.mu.Lock()
	d.dead = true
	task, runner := d.task, d.runner
	d.mu.Unlock()
	const ttl = time.Microsecond
	if _, err := d.Tasks.RenewTask(context.WithoutCancel(ctx), task, runner, ttl, nil); err != nil {
		panic(err)
	}
	// The lease has lapsed once the wall clock has moved past it: a
	// coarse clock (Wine's ticks in milliseconds) still reads the same
	// instant a microsecond later.
	for lapsed := time.Now().Add(ttl).Round(0); !time.Now().Round(0).After(lapsed); {
		time.Sleep(time.Millisecond)
	}
}

// gone reports whether the process died.
func (d *Dying) gone() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dead
}

// AppendMessages implements the store, failing once the process is gone.
func (d *Dying) AppendMessages(ctx context.Context, sessionID, parentID string, msgs []sessions.NewMessage, moveHead bool) ([]sessions.Message, error) {
	if d.gone() {
		return nil, ErrDead
	}
	out, err := d.Store.AppendMessages(ctx, sessionID, parentID, msgs, moveHead)
	if err == nil && slices.ContainsFunc(msgs, func(m sessions.NewMessage) bool { return m.Role == sessions.RoleAssistant }) {
		d.die(ctx)
	}
	return out, err
}

// AppendAudit implements the store, failing once the process is gone.
func (d *Dying) AppendAudit(ctx context.Context, r sessions.NewAuditRecord) (sessions.AuditRecord, error) {
	if d.gone() {
		return sessions.AuditRecord{}, ErrDead
	}
	return d.Store.AppendAudit(ctx, r)
}

// RenewTurn implements the store, failing once the process is gone.
func (d *Dying) RenewTurn(ctx context.Context, sessionID, owner string, ttl time.Duration) error {
	if d.gone() {
		return ErrDead
	}
	return d.Store.RenewTurn(ctx, sessionID, owner, ttl)
}

// ReleaseTurn implements the store, failing once the process is gone.
func (d *Dying) ReleaseTurn(ctx context.Context, sessionID, owner string) error {
	if d.gone() {
		return ErrDead
	}
	return d.Store.ReleaseTurn(ctx, sessionID, owner)
}

// DeleteSession implements the store, failing once the process is gone.
func (d *Dying) DeleteSession(ctx context.Context, id string) error {
	if d.gone() {
		return ErrDead
	}
	return d.Store.DeleteSession(ctx, id)
}

// CreateTask implements the store, failing once the process is gone.
func (d *Dying) CreateTask(ctx context.Context, t sessions.NewTask) (sessions.Task, error) {
	return d.Tasks.CreateTask(ctx, t)
}

// GetTask implements the store, failing once the process is gone.
func (d *Dying) GetTask(ctx context.Context, clientID, id string) (sessions.Task, error) {
	return d.Tasks.GetTask(ctx, clientID, id)
}

// ListTasks implements the store, failing once the process is gone.
func (d *Dying) ListTasks(ctx context.Context, clientID, cursor string, limit int) (sessions.TaskPage, error) {
	return d.Tasks.ListTasks(ctx, clientID, cursor, limit)
}

// CancelTask implements the store, failing once the process is gone.
func (d *Dying) CancelTask(ctx context.Context, clientID, id string) (sessions.Task, error) {
	return d.Tasks.CancelTask(ctx, clientID, id)
}

// ClaimTask implements the store, failing once the process is gone.
func (d *Dying) ClaimTask(ctx context.Context, id, runner string, ttl time.Duration) (sessions.Task, error) {
	if d.gone() {
		return sessions.Task{}, ErrDead
	}
	return d.Tasks.ClaimTask(ctx, id, runner, ttl)
}

// RenewTask implements the store, failing once the process is gone.
func (d *Dying) RenewTask(ctx context.Context, id, runner string, ttl time.Duration, progress json.RawMessage) (sessions.Task, error) {
	if d.gone() {
		return sessions.Task{}, ErrDead
	}
	return d.Tasks.RenewTask(ctx, id, runner, ttl, progress)
}

// CommitTask implements the store, failing once the process is gone.
func (d *Dying) CommitTask(ctx context.Context, id, runner string) (sessions.Task, error) {
	if d.gone() {
		return sessions.Task{}, ErrDead
	}
	d.mu.Lock()
	d.task, d.runner = id, runner
	d.mu.Unlock()
	task, err := d.Tasks.CommitTask(ctx, id, runner)
	if err == nil && d.AtCommit {
		d.die(ctx)
	}
	return task, err
}

// FinishTask implements the store, failing once the process is gone.
func (d *Dying) FinishTask(ctx context.Context, id, runner, status, message string, result json.RawMessage) (sessions.Task, error) {
	if d.gone() {
		return sessions.Task{}, ErrDead
	}
	return d.Tasks.FinishTask(ctx, id, runner, status, message, result)
}

// FailAbandonedTasks implements the store, failing once the process is gone.
func (d *Dying) FailAbandonedTasks(ctx context.Context, message string, result json.RawMessage, unclaimed time.Duration) (int, error) {
	return d.Tasks.FailAbandonedTasks(ctx, message, result, unclaimed)
}

// AbandonedCommits implements the store, failing once the process is gone.
func (d *Dying) AbandonedCommits(ctx context.Context, limit int) ([]sessions.Task, error) {
	return d.Tasks.AbandonedCommits(ctx, limit)
}

// PurgeExpiredTasks implements the store, failing once the process is gone.
func (d *Dying) PurgeExpiredTasks(ctx context.Context) (int, error) {
	return d.Tasks.PurgeExpiredTasks(ctx)
}
