package taskrules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// Columns are the columns of a task row, in the order the backends scan
// them.
const Columns = `id, client_id, status, status_message, request, result, progress,
	created_at, updated_at, ttl, committing, runner, runner_expires_at`

// ListColumns are Columns without the JSON documents (NULL), for a page of
// tasks.
const ListColumns = `id, client_id, status, status_message, NULL, NULL, NULL,
	created_at, updated_at, ttl, committing, runner, runner_expires_at`

// Backend is the SQL a store backend runs for [sessions.TaskStore]; the
// checks, the retries and the reasons for a refusal around it are Tasks'.
// Every compare-and-set method runs one conditional UPDATE ... RETURNING
// and reports ok false, with no error, when its condition held for no row.
type Backend interface {
	// Insert creates task in (already checked), refusing with
	// sessions.ErrTaskLimit past in.MaxWorking and sessions.ErrExists for
	// a taken id, both wrapped with op.
	Insert(ctx context.Context, op string, in sessions.NewTask) (sessions.Task, error)
	// Read reads the unexpired task id, whoever's it is.
	Read(ctx context.Context, id string) (t sessions.Task, found bool, err error)
	// List reads up to n unexpired tasks of clientID without their JSON
	// documents, in (CreatedAt, ID) order, after (after, afterID);
	// afterID "" is the first page.
	List(ctx context.Context, clientID string, after time.Time, afterID string, n int) ([]sessions.Task, error)
	// Cancel cancels task id of clientID if it is working and not
	// committing.
	Cancel(ctx context.Context, clientID, id string) (t sessions.Task, ok bool, err error)
	// Claim gives task id's lease to runner for ttl if the task is working,
	// not committing and its lease is free, runner's or lapsed.
	Claim(ctx context.Context, id, runner string, ttl time.Duration) (t sessions.Task, ok bool, err error)
	// Renew extends runner's lease on the unexpired task id to ttl and, on
	// a working task, sets progress (nil: unchanged).
	Renew(ctx context.Context, id, runner string, ttl time.Duration, progress json.RawMessage) (t sessions.Task, ok bool, err error)
	// Commit marks the working task id committing while runner's lease is
	// live.
	Commit(ctx context.Context, id, runner string) (t sessions.Task, ok bool, err error)
	// Finish settles the working task id of runner (cancelled only when
	// not committing).
	Finish(ctx context.Context, id, runner, status, message string, result json.RawMessage) (t sessions.Task, ok bool, err error)
	// FailAbandoned fails the working tasks whose lease lapsed or that no
	// runner claimed within unclaimed, and counts them.
	FailAbandoned(ctx context.Context, message string, result json.RawMessage, unclaimed time.Duration) (int, error)
	// AbandonedCommits reads up to n working, committing tasks whose lease
	// lapsed, in (CreatedAt, ID) order.
	AbandonedCommits(ctx context.Context, n int) ([]sessions.Task, error)
}

// Tasks implements [sessions.TaskStore] but for PurgeExpiredTasks over a
// Backend; a backend's Store embeds it.
type Tasks struct {
	b Backend
	// dbClock: the backend's conditions judge leases by the database's
	// clock, so a refusal is not judged again by this process's clock.
	dbClock bool
}

// New returns the Tasks over b; dbClock says b's conditions judge leases
// by the database's clock, so a refusal is not judged again by this
// process's clock.
func New(b Backend, dbClock bool) Tasks { return Tasks{b: b, dbClock: dbClock} }

// casAttempts bounds the retries of a compare-and-set whose refusal the
// row read after it does not explain (the row changed in between).
const casAttempts = 3

// CreateTask implements [sessions.TaskStore].
func (t Tasks) CreateTask(ctx context.Context, in sessions.NewTask) (sessions.Task, error) {
	if err := CheckNew(in); err != nil {
		return sessions.Task{}, err
	}
	return t.b.Insert(ctx, fmt.Sprintf("create task %q", in.ID), in)
}

// TooMany is the refusal of a create when the client already has n of at
// most max working tasks, wrapping op.
func TooMany(op string, n, max int) error {
	return fmt.Errorf("%s: the client has %d working tasks, the maximum is %d: %w", op, n, max, sessions.ErrTaskLimit)
}

// GetTask implements [sessions.TaskStore].
func (t Tasks) GetTask(ctx context.Context, clientID, id string) (sessions.Task, error) {
	task, found, err := t.read(ctx, id)
	if err != nil {
		return sessions.Task{}, fmt.Errorf("get task %q: %w", id, err)
	}
	if !found || task.ClientID != clientID {
		return sessions.Task{}, fmt.Errorf("get task %q: %w", id, sessions.ErrNotFound)
	}
	return task, nil
}

// read is Backend.Read, without asking for an id no row holds.
func (t Tasks) read(ctx context.Context, id string) (sessions.Task, bool, error) {
	if Unstorable(id) {
		return sessions.Task{}, false, nil
	}
	return t.b.Read(ctx, id)
}

// ListTasks implements [sessions.TaskStore].
func (t Tasks) ListTasks(ctx context.Context, clientID, cursor string, limit int) (sessions.TaskPage, error) {
	limit = Limit(limit)
	var (
		after   time.Time
		afterID string
	)
	if cursor != "" {
		var err error
		if after, afterID, err = DecodeCursor(cursor); err != nil {
			return sessions.TaskPage{}, err
		}
	}
	page := sessions.TaskPage{Tasks: []sessions.Task{}}
	if Unstorable(clientID) {
		return page, nil
	}
	tasks, err := t.b.List(ctx, clientID, after, afterID, limit+1)
	if err != nil {
		return sessions.TaskPage{}, fmt.Errorf("list tasks: %w", err)
	}
	page.Tasks = append(page.Tasks, tasks...)
	if len(page.Tasks) > limit {
		page.Tasks = page.Tasks[:limit]
		last := page.Tasks[limit-1]
		page.Next = EncodeCursor(last.CreatedAt, last.ID)
	}
	return page, nil
}

// CancelTask implements [sessions.TaskStore].
func (t Tasks) CancelTask(ctx context.Context, clientID, id string) (sessions.Task, error) {
	op := fmt.Sprintf("cancel task %q", id)
	if Unstorable(clientID, id) {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, sessions.ErrNotFound)
	}
	return t.retry(ctx, op, clientID, id, func() (sessions.Task, bool, error) { return t.b.Cancel(ctx, clientID, id) },
		func(cur sessions.Task) error {
			if cur.Committing {
				return fmt.Errorf("%s: the task is committing its result: %w", op, sessions.ErrTaskDone)
			}
			return nil
		})
}

// ClaimTask implements [sessions.TaskStore].
func (t Tasks) ClaimTask(ctx context.Context, id, runner string, ttl time.Duration) (sessions.Task, error) {
	op := fmt.Sprintf("claim task %q", id)
	if err := CheckLease(op, id, runner, ttl); err != nil {
		return sessions.Task{}, err
	}
	return t.retry(ctx, op, "", id, func() (sessions.Task, bool, error) { return t.b.Claim(ctx, id, runner, ttl) },
		func(cur sessions.Task) error {
			switch {
			case cur.Committing:
				return fmt.Errorf("%s: the task is committing: %w", op, sessions.ErrTaskDone)
			case cur.Runner != "" && cur.Runner != runner && (t.dbClock || cur.RunnerExpiresAt.After(time.Now())):
				// With dbClock the lease was live when the update ran.
				return fmt.Errorf("%s: runner %q holds it: %w", op, cur.Runner, sessions.ErrBusy)
			}
			return nil
		})
}

// retry runs the compare-and-set cas up to casAttempts times while the
// task read after a refusal does not explain it: not found (or, with
// clientID, not that client's), terminal (sessions.ErrTaskDone, with the
// task) or what why says (an error wrapping sessions.ErrTaskDone returns
// the task too).
func (t Tasks) retry(ctx context.Context, op, clientID, id string, cas func() (sessions.Task, bool, error), why func(sessions.Task) error) (sessions.Task, error) {
	for range casAttempts {
		task, ok, err := cas()
		if err != nil {
			return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
		}
		if ok {
			return task, nil
		}
		cur, found, err := t.read(ctx, id)
		switch {
		case err != nil:
			return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
		case !found || (clientID != "" && cur.ClientID != clientID):
			return sessions.Task{}, fmt.Errorf("%s: %w", op, sessions.ErrNotFound)
		case cur.Status != sessions.TaskWorking:
			return cur, fmt.Errorf("%s: the task is %s: %w", op, cur.Status, sessions.ErrTaskDone)
		}
		if err := why(cur); errors.Is(err, sessions.ErrTaskDone) {
			return cur, err
		} else if err != nil {
			return sessions.Task{}, err
		}
	}
	return sessions.Task{}, fmt.Errorf("%s: the task kept changing; try again", op)
}

// RenewTask implements [sessions.TaskStore].
func (t Tasks) RenewTask(ctx context.Context, id, runner string, ttl time.Duration, progress json.RawMessage) (sessions.Task, error) {
	op := fmt.Sprintf("renew task %q", id)
	if err := CheckLease(op, id, runner, ttl); err != nil {
		return sessions.Task{}, err
	}
	if err := CheckJSON("task progress", progress); err != nil {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	task, ok, err := t.b.Renew(ctx, id, runner, ttl, progress)
	return t.settle(ctx, op, id, runner, task, ok, err, false, false)
}

// CommitTask implements [sessions.TaskStore].
func (t Tasks) CommitTask(ctx context.Context, id, runner string) (sessions.Task, error) {
	op := fmt.Sprintf("commit task %q", id)
	if err := CheckRunner(op, id, runner); err != nil {
		return sessions.Task{}, err
	}
	task, ok, err := t.b.Commit(ctx, id, runner)
	return t.settle(ctx, op, id, runner, task, ok, err, false, true)
}

// FinishTask implements [sessions.TaskStore].
func (t Tasks) FinishTask(ctx context.Context, id, runner, status, message string, result json.RawMessage) (sessions.Task, error) {
	op := fmt.Sprintf("finish task %q", id)
	if err := CheckRunner(op, id, runner); err != nil {
		return sessions.Task{}, err
	}
	if err := CheckFinish(op, status, message, result); err != nil {
		return sessions.Task{}, err
	}
	task, ok, err := t.b.Finish(ctx, id, runner, status, message, result)
	return t.settle(ctx, op, id, runner, task, ok, err, status == sessions.TaskCancelled, false)
}

// settle returns the outcome of a runner's compare-and-set (task, ok,
// err), explaining a refusal by the task read after it (see [Refusal]).
func (t Tasks) settle(ctx context.Context, op, id, runner string, task sessions.Task, ok bool, err error, committingRefuses, needLive bool) (sessions.Task, error) {
	if err != nil {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	if ok {
		return task, nil
	}
	cur, found, err := t.read(ctx, id)
	if err != nil {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := Refusal(op, cur, found, runner, committingRefuses, needLive, time.Now()); err != nil {
		if errors.Is(err, sessions.ErrTaskDone) {
			return cur, err
		}
		return sessions.Task{}, err
	}
	if needLive && t.dbClock {
		// The update judged the lease lapsed by the database clock.
		return sessions.Task{}, fmt.Errorf("%s for runner %q: the lease lapsed: %w", op, runner, sessions.ErrLeaseLost)
	}
	return sessions.Task{}, fmt.Errorf("%s: the task changed meanwhile; try again", op)
}

// FailAbandonedTasks implements [sessions.TaskStore].
func (t Tasks) FailAbandonedTasks(ctx context.Context, message string, result json.RawMessage, unclaimed time.Duration) (int, error) {
	const op = "fail abandoned tasks"
	if err := CheckOutcome(op, message, result); err != nil {
		return 0, err
	}
	if unclaimed <= 0 {
		return 0, fmt.Errorf("%s: unclaimed %v, want a positive duration", op, unclaimed)
	}
	n, err := t.b.FailAbandoned(ctx, message, result, unclaimed)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return n, nil
}

// AbandonedCommits implements [sessions.TaskStore].
func (t Tasks) AbandonedCommits(ctx context.Context, limit int) ([]sessions.Task, error) {
	tasks, err := t.b.AbandonedCommits(ctx, Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("list abandoned committing tasks: %w", err)
	}
	return tasks, nil
}
