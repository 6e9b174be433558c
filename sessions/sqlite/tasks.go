package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/taskrules"
)

var _ sessions.TaskStore = (*Store)(nil)

// Every compare-and-set below is one conditional UPDATE ... RETURNING on
// the writer connection: SQLite runs one write at a time across processes,
// so of two racing updates the second sees the first's row. Times are
// judged by this process's clock, in Unix microseconds.

const taskColumns = `id, client_id, status, status_message, request, result, progress,
	created_at, updated_at, ttl, committing, runner, runner_expires_at`

// taskListColumns leave out the JSON documents (see ListTasks).
const taskListColumns = `id, client_id, status, status_message, NULL, NULL, NULL,
	created_at, updated_at, ttl, committing, runner, runner_expires_at`

// visible is the condition of an unexpired task at ?now.
const visible = `(status = 'working' OR expires_at > :now)`

func scanTask(r scanner) (sessions.Task, error) {
	var (
		t                                    sessions.Task
		request, result, progress            sql.NullString
		created, updated, ttl, runnerExpires int64
		committing                           int
	)
	if err := r.Scan(&t.ID, &t.ClientID, &t.Status, &t.StatusMessage, &request, &result, &progress,
		&created, &updated, &ttl, &committing, &t.Runner, &runnerExpires); err != nil {
		return sessions.Task{}, err
	}
	t.Request, t.Result, t.Progress = rawJSON(request), rawJSON(result), rawJSON(progress)
	t.CreatedAt, t.UpdatedAt = fromMicros(created), fromMicros(updated)
	t.TTL = time.Duration(ttl) * time.Microsecond
	t.Committing = committing != 0
	if t.Runner != "" {
		t.RunnerExpiresAt = fromMicros(runnerExpires)
	}
	return t, nil
}

func rawJSON(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// nullJSON stores nil as NULL.
func nullJSON(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// durMicros is d in whole microseconds, rounded up so that a tiny positive
// duration is not already over.
func durMicros(d time.Duration) int64 { return (d + time.Microsecond - 1).Microseconds() }

// CreateTask implements [sessions.TaskStore]. The cap is counted and the
// row inserted in one write transaction, which SQLite serialises across
// connections and processes.
func (s *Store) CreateTask(ctx context.Context, in sessions.NewTask) (sessions.Task, error) {
	if err := taskrules.CheckNew(in); err != nil {
		return sessions.Task{}, err
	}
	op := fmt.Sprintf("create task %q", in.ID)
	now := nowMicros()
	ttl := durMicros(in.TTL)
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if in.MaxWorking > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM tasks INDEXED BY tasks_working
				WHERE client_id = ? AND status = 'working'`, in.ClientID).Scan(&n); err != nil {
				return fmt.Errorf("%s: count working tasks: %w", op, err)
			}
			if n >= in.MaxWorking {
				return fmt.Errorf("%s: the client has %d working tasks, the maximum is %d: %w", op, n, in.MaxWorking, sessions.ErrTaskLimit)
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, client_id, status, request, created_at, updated_at, ttl, expires_at)
			VALUES (?, ?, 'working', ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			in.ID, in.ClientID, string(in.Request), now, now, ttl, now+ttl)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		} else if n == 0 {
			return fmt.Errorf("%s: %w", op, sessions.ErrExists)
		}
		return nil
	})
	if err != nil {
		return sessions.Task{}, err
	}
	return sessions.Task{ID: in.ID, ClientID: in.ClientID, Status: sessions.TaskWorking, Request: in.Request,
		CreatedAt: fromMicros(now), UpdatedAt: fromMicros(now), TTL: time.Duration(ttl) * time.Microsecond}, nil
}

// GetTask implements [sessions.TaskStore].
func (s *Store) GetTask(ctx context.Context, clientID, id string) (sessions.Task, error) {
	t, found, err := s.readTask(ctx, id)
	if err != nil {
		return sessions.Task{}, fmt.Errorf("get task %q: %w", id, err)
	}
	if !found || t.ClientID != clientID {
		return sessions.Task{}, fmt.Errorf("get task %q: %w", id, sessions.ErrNotFound)
	}
	return t, nil
}

// readTask reads unexpired task id, whoever's it is.
func (s *Store) readTask(ctx context.Context, id string) (sessions.Task, bool, error) {
	if taskrules.Unstorable(id) {
		return sessions.Task{}, false, nil
	}
	t, err := scanTask(s.r.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = :id AND `+visible,
		sql.Named("id", id), sql.Named("now", nowMicros())))
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.Task{}, false, nil
	}
	if err != nil {
		return sessions.Task{}, false, err
	}
	return t, true, nil
}

// ListTasks implements [sessions.TaskStore] on the index tasks_client.
func (s *Store) ListTasks(ctx context.Context, clientID, cursor string, limit int) (sessions.TaskPage, error) {
	limit = taskrules.Limit(limit)
	after, afterID := int64(-1<<63), ""
	if cursor != "" {
		t, id, err := taskrules.DecodeCursor(cursor)
		if err != nil {
			return sessions.TaskPage{}, err
		}
		after, afterID = micros(t), id
	}
	if taskrules.Unstorable(clientID) {
		return sessions.TaskPage{Tasks: []sessions.Task{}}, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+taskListColumns+` FROM tasks INDEXED BY tasks_client
		WHERE client_id = :client AND (created_at, id) > (:after, :after_id) AND `+visible+`
		ORDER BY created_at, id LIMIT :limit`,
		sql.Named("client", clientID), sql.Named("after", after), sql.Named("after_id", afterID),
		sql.Named("now", nowMicros()), sql.Named("limit", limit+1))
	if err != nil {
		return sessions.TaskPage{}, fmt.Errorf("list tasks: %w", err)
	}
	defer rows.Close()
	page := sessions.TaskPage{Tasks: []sessions.Task{}}
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return sessions.TaskPage{}, fmt.Errorf("list tasks: %w", err)
		}
		page.Tasks = append(page.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return sessions.TaskPage{}, fmt.Errorf("list tasks: %w", err)
	}
	if len(page.Tasks) > limit {
		page.Tasks = page.Tasks[:limit]
		last := page.Tasks[limit-1]
		page.Next = taskrules.EncodeCursor(last.CreatedAt, last.ID)
	}
	return page, nil
}

// updateTask runs one conditional UPDATE ... RETURNING taskColumns on the
// writer; found is false when the condition held for no row.
func (s *Store) updateTask(ctx context.Context, query string, args ...any) (sessions.Task, bool, error) {
	t, err := scanTask(s.w.QueryRowContext(ctx, query+` RETURNING `+taskColumns, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.Task{}, false, nil
	}
	if err != nil {
		return sessions.Task{}, false, err
	}
	return t, true, nil
}

// casAttempts bounds the retries of a compare-and-set whose refusal the
// row read after it does not explain (the row changed in between).
const casAttempts = 3

// CancelTask implements [sessions.TaskStore].
func (s *Store) CancelTask(ctx context.Context, clientID, id string) (sessions.Task, error) {
	op := fmt.Sprintf("cancel task %q", id)
	if taskrules.Unstorable(clientID, id) {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, sessions.ErrNotFound)
	}
	for range casAttempts {
		now := nowMicros()
		t, ok, err := s.updateTask(ctx, `UPDATE tasks SET status = 'cancelled', updated_at = :now
			WHERE id = :id AND client_id = :client AND status = 'working' AND committing = 0`,
			sql.Named("id", id), sql.Named("client", clientID), sql.Named("now", now))
		if err != nil {
			return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
		}
		if ok {
			return t, nil
		}
		cur, found, err := s.readTask(ctx, id)
		switch {
		case err != nil:
			return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
		case !found || cur.ClientID != clientID:
			return sessions.Task{}, fmt.Errorf("%s: %w", op, sessions.ErrNotFound)
		case cur.Status != sessions.TaskWorking:
			return cur, fmt.Errorf("%s: the task is %s: %w", op, cur.Status, sessions.ErrTaskDone)
		case cur.Committing:
			return cur, fmt.Errorf("%s: the task is committing its result: %w", op, sessions.ErrTaskDone)
		}
	}
	return sessions.Task{}, fmt.Errorf("%s: the task kept changing; try again", op)
}

// ClaimTask implements [sessions.TaskStore].
func (s *Store) ClaimTask(ctx context.Context, id, runner string, ttl time.Duration) (sessions.Task, error) {
	op := fmt.Sprintf("claim task %q", id)
	if err := taskrules.CheckLease(op, id, runner, ttl); err != nil {
		return sessions.Task{}, err
	}
	for range casAttempts {
		now := nowMicros()
		t, ok, err := s.updateTask(ctx, `UPDATE tasks SET runner = :runner, runner_expires_at = :until
			WHERE id = :id AND status = 'working' AND committing = 0
			AND (runner = '' OR runner = :runner OR runner_expires_at <= :now)`,
			sql.Named("id", id), sql.Named("runner", runner), sql.Named("until", now+durMicros(ttl)), sql.Named("now", now))
		if err != nil {
			return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
		}
		if ok {
			return t, nil
		}
		cur, found, err := s.readTask(ctx, id)
		switch {
		case err != nil:
			return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
		case !found:
			return sessions.Task{}, fmt.Errorf("%s: %w", op, sessions.ErrNotFound)
		case cur.Status != sessions.TaskWorking:
			return cur, fmt.Errorf("%s: the task is %s: %w", op, cur.Status, sessions.ErrTaskDone)
		case cur.Committing:
			return cur, fmt.Errorf("%s: the task is committing: %w", op, sessions.ErrTaskDone)
		case cur.Runner != "" && cur.Runner != runner && cur.RunnerExpiresAt.After(time.Now()):
			return sessions.Task{}, fmt.Errorf("%s: runner %q holds it: %w", op, cur.Runner, sessions.ErrBusy)
		}
	}
	return sessions.Task{}, fmt.Errorf("%s: the task kept changing; try again", op)
}

// RenewTask implements [sessions.TaskStore].
func (s *Store) RenewTask(ctx context.Context, id, runner string, ttl time.Duration, progress json.RawMessage) (sessions.Task, error) {
	op := fmt.Sprintf("renew task %q", id)
	if err := taskrules.CheckLease(op, id, runner, ttl); err != nil {
		return sessions.Task{}, err
	}
	if err := taskrules.CheckJSON("task progress", progress); err != nil {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	now := nowMicros()
	t, ok, err := s.updateTask(ctx, `UPDATE tasks SET runner_expires_at = :until,
			progress = CASE WHEN :progress IS NOT NULL AND status = 'working' THEN :progress ELSE progress END,
			updated_at = CASE WHEN :progress IS NOT NULL AND status = 'working' THEN :now ELSE updated_at END
		WHERE id = :id AND runner = :runner AND `+visible,
		sql.Named("id", id), sql.Named("runner", runner), sql.Named("until", now+durMicros(ttl)),
		sql.Named("progress", nullJSON(progress)), sql.Named("now", now))
	if err != nil {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	if !ok {
		return s.runnerRefusal(ctx, op, id, runner, false, false)
	}
	return t, nil
}

// runnerRefusal explains why a runner's update of task id changed nothing.
func (s *Store) runnerRefusal(ctx context.Context, op, id, runner string, committingRefuses, needLive bool) (sessions.Task, error) {
	cur, found, err := s.readTask(ctx, id)
	if err != nil {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	if err := taskrules.Refusal(op, cur, found, runner, committingRefuses, needLive, time.Now()); err != nil {
		if errors.Is(err, sessions.ErrTaskDone) {
			return cur, err
		}
		return sessions.Task{}, err
	}
	return sessions.Task{}, fmt.Errorf("%s: the task changed meanwhile; try again", op)
}

// CommitTask implements [sessions.TaskStore].
func (s *Store) CommitTask(ctx context.Context, id, runner string) (sessions.Task, error) {
	op := fmt.Sprintf("commit task %q", id)
	if err := taskrules.CheckRunner(op, id, runner); err != nil {
		return sessions.Task{}, err
	}
	t, ok, err := s.updateTask(ctx, `UPDATE tasks SET committing = 1
		WHERE id = :id AND runner = :runner AND status = 'working' AND runner_expires_at > :now`,
		sql.Named("id", id), sql.Named("runner", runner), sql.Named("now", nowMicros()))
	if err != nil {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	if !ok {
		return s.runnerRefusal(ctx, op, id, runner, false, true)
	}
	return t, nil
}

// FinishTask implements [sessions.TaskStore].
func (s *Store) FinishTask(ctx context.Context, id, runner, status, message string, result json.RawMessage) (sessions.Task, error) {
	op := fmt.Sprintf("finish task %q", id)
	if err := taskrules.CheckRunner(op, id, runner); err != nil {
		return sessions.Task{}, err
	}
	if err := taskrules.CheckFinish(op, status, message, result); err != nil {
		return sessions.Task{}, err
	}
	t, ok, err := s.updateTask(ctx, `UPDATE tasks SET status = :status, status_message = :message, result = :result, updated_at = :now
		WHERE id = :id AND runner = :runner AND status = 'working' AND (:status <> 'cancelled' OR committing = 0)`,
		sql.Named("id", id), sql.Named("runner", runner), sql.Named("status", status), sql.Named("message", message),
		sql.Named("result", nullJSON(result)), sql.Named("now", nowMicros()))
	if err != nil {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	if !ok {
		return s.runnerRefusal(ctx, op, id, runner, status == sessions.TaskCancelled, false)
	}
	return t, nil
}

// FailAbandonedTasks implements [sessions.TaskStore].
func (s *Store) FailAbandonedTasks(ctx context.Context, message string, result json.RawMessage, unclaimed time.Duration) (int, error) {
	const op = "fail abandoned tasks"
	if err := taskrules.CheckOutcome(op, message, result); err != nil {
		return 0, err
	}
	if unclaimed <= 0 {
		return 0, fmt.Errorf("%s: unclaimed %v, want a positive duration", op, unclaimed)
	}
	now := nowMicros()
	res, err := s.w.ExecContext(ctx, `UPDATE tasks INDEXED BY tasks_lapsed
		SET status = 'failed', status_message = :message, result = :result, updated_at = :now
		WHERE status = 'working' AND ((runner <> '' AND runner_expires_at <= :now) OR (runner = '' AND created_at <= :unclaimed))`,
		sql.Named("message", message), sql.Named("result", nullJSON(result)), sql.Named("now", now),
		sql.Named("unclaimed", now-durMicros(unclaimed)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return int(n), nil
}

// PurgeExpiredTasks implements [sessions.TaskStore].
func (s *Store) PurgeExpiredTasks(ctx context.Context) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM tasks INDEXED BY tasks_expired WHERE status <> 'working' AND expires_at <= ?`, nowMicros())
	if err != nil {
		return 0, fmt.Errorf("purge expired tasks: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge expired tasks: %w", err)
	}
	return int(n), nil
}
