package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/taskrules"
)

var _ sessions.TaskStore = (*Store)(nil)

// Every compare-and-set below is one conditional UPDATE ... RETURNING: an
// UPDATE that waits for another's row lock re-checks its WHERE on the row
// the other committed (READ COMMITTED), so of two racing updates, whatever
// connection or process each runs on, the second sees the first's row.
// Times are judged by the database clock (now()). The updates that are
// not idempotent run in a transaction (tx), which is retried only when it
// failed before COMMIT; the idempotent ones and reads run with run.

const taskColumns = `id, client_id, status, status_message, request, result, progress,
	created_at, updated_at, ttl, committing, runner, runner_expires_at`

// taskListColumns leave out the JSON documents (see ListTasks).
const taskListColumns = `id, client_id, status, status_message, NULL, NULL, NULL,
	created_at, updated_at, ttl, committing, runner, runner_expires_at`

// visible is the condition of an unexpired task.
const visible = `(status = 'working' OR expires_at > now())`

func scanTask(row pgx.Row) (sessions.Task, error) {
	var (
		t                         sessions.Task
		request, result, progress *string
		ttl                       int64
		runnerExpires             *time.Time
	)
	if err := row.Scan(&t.ID, &t.ClientID, &t.Status, &t.StatusMessage, &request, &result, &progress,
		&t.CreatedAt, &t.UpdatedAt, &ttl, &t.Committing, &t.Runner, &runnerExpires); err != nil {
		return sessions.Task{}, err
	}
	t.Request, t.Result, t.Progress = rawJSON(request), rawJSON(result), rawJSON(progress)
	t.TTL = time.Duration(ttl) * time.Microsecond
	if runnerExpires != nil {
		t.RunnerExpiresAt = *runnerExpires
	}
	return t, nil
}

func rawJSON(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

// nullJSON stores nil as NULL.
func nullJSON(b json.RawMessage) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// CreateTask implements [sessions.TaskStore]. With a cap, the transaction
// first takes an advisory lock keyed by the schema and the client, so the
// creates of one client run one at a time and each counts the working
// tasks the previous ones committed.
func (s *Store) CreateTask(ctx context.Context, in sessions.NewTask) (sessions.Task, error) {
	if err := taskrules.CheckNew(in); err != nil {
		return sessions.Task{}, err
	}
	op := fmt.Sprintf("create task %q", in.ID)
	var out sessions.Task
	err := s.tx(ctx, readWrite, func(tx pgx.Tx) error {
		if in.MaxWorking > 0 {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('openprogram.sessions.tasks:' || current_schema() || ':' || $1, 0))`,
				in.ClientID); err != nil {
				return fmt.Errorf("%s: take the client's task lock: %w", op, err)
			}
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE client_id = $1 AND status = 'working'`, in.ClientID).Scan(&n); err != nil {
				return fmt.Errorf("%s: count working tasks: %w", op, err)
			}
			if n >= in.MaxWorking {
				return fmt.Errorf("%s: the client has %d working tasks, the maximum is %d: %w", op, n, in.MaxWorking, sessions.ErrTaskLimit)
			}
		}
		var err error
		out, err = scanTask(tx.QueryRow(ctx, `INSERT INTO tasks (id, client_id, status, request, created_at, updated_at, ttl, expires_at)
			VALUES ($1, $2, 'working', $3, now(), now(), $4::bigint, now() + $4::bigint * interval '1 microsecond')
			ON CONFLICT (id) DO NOTHING RETURNING `+taskColumns,
			in.ID, in.ClientID, string(in.Request), micros(in.TTL)))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%s: %w", op, sessions.ErrExists)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
	if err != nil {
		return sessions.Task{}, err
	}
	return out, nil
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
	var t sessions.Task
	err := s.run(ctx, func(q querier) error {
		var err error
		t, err = scanTask(q.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = $1 AND `+visible, id))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.Task{}, false, nil
	}
	if err != nil {
		return sessions.Task{}, false, err
	}
	return t, true, nil
}

// ListTasks implements [sessions.TaskStore] on the index tasks_client_idx.
func (s *Store) ListTasks(ctx context.Context, clientID, cursor string, limit int) (sessions.TaskPage, error) {
	limit = taskrules.Limit(limit)
	query := `SELECT ` + taskListColumns + ` FROM tasks WHERE client_id = $1 AND ` + visible
	args := []any{clientID, limit + 1}
	if cursor != "" {
		after, afterID, err := taskrules.DecodeCursor(cursor)
		if err != nil {
			return sessions.TaskPage{}, err
		}
		query += ` AND (created_at, id) > ($3, $4)`
		args = append(args, after, afterID)
	}
	query += ` ORDER BY created_at, id LIMIT $2`
	if taskrules.Unstorable(clientID) {
		return sessions.TaskPage{Tasks: []sessions.Task{}}, nil
	}
	page := sessions.TaskPage{Tasks: []sessions.Task{}}
	err := s.run(ctx, func(q querier) error {
		page.Tasks = page.Tasks[:0]
		rows, err := q.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanTask(rows)
			if err != nil {
				return err
			}
			page.Tasks = append(page.Tasks, t)
		}
		return rows.Err()
	})
	if err != nil {
		return sessions.TaskPage{}, fmt.Errorf("list tasks: %w", err)
	}
	if len(page.Tasks) > limit {
		page.Tasks = page.Tasks[:limit]
		last := page.Tasks[limit-1]
		page.Next = taskrules.EncodeCursor(last.CreatedAt, last.ID)
	}
	return page, nil
}

// updateTask runs one conditional UPDATE ... RETURNING taskColumns, in a
// transaction unless idempotent; found is false when the condition held
// for no row.
func (s *Store) updateTask(ctx context.Context, idempotent bool, query string, args ...any) (sessions.Task, bool, error) {
	var t sessions.Task
	one := func(q querier) error {
		var err error
		t, err = scanTask(q.QueryRow(ctx, query+` RETURNING `+taskColumns, args...))
		return err
	}
	var err error
	if idempotent {
		err = s.run(ctx, one)
	} else {
		err = s.tx(ctx, readWrite, func(tx pgx.Tx) error { return one(tx) })
	}
	if errors.Is(err, pgx.ErrNoRows) {
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
		t, ok, err := s.updateTask(ctx, false, `UPDATE tasks SET status = 'cancelled', updated_at = now()
			WHERE id = $1 AND client_id = $2 AND status = 'working' AND NOT committing`, id, clientID)
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

// ClaimTask implements [sessions.TaskStore]. It is idempotent for runner.
func (s *Store) ClaimTask(ctx context.Context, id, runner string, ttl time.Duration) (sessions.Task, error) {
	op := fmt.Sprintf("claim task %q", id)
	if err := taskrules.CheckLease(op, id, runner, ttl); err != nil {
		return sessions.Task{}, err
	}
	for range casAttempts {
		t, ok, err := s.updateTask(ctx, true, `UPDATE tasks SET runner = $2, runner_expires_at = now() + $3 * interval '1 microsecond'
			WHERE id = $1 AND status = 'working' AND NOT committing
			AND (runner = '' OR runner = $2 OR runner_expires_at <= now())`, id, runner, micros(ttl))
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
		case cur.Runner != "" && cur.Runner != runner:
			// Its lease was live when the update ran (by the database clock).
			return sessions.Task{}, fmt.Errorf("%s: runner %q holds it: %w", op, cur.Runner, sessions.ErrBusy)
		}
	}
	return sessions.Task{}, fmt.Errorf("%s: the task kept changing; try again", op)
}

// RenewTask implements [sessions.TaskStore]. It is idempotent.
func (s *Store) RenewTask(ctx context.Context, id, runner string, ttl time.Duration, progress json.RawMessage) (sessions.Task, error) {
	op := fmt.Sprintf("renew task %q", id)
	if err := taskrules.CheckLease(op, id, runner, ttl); err != nil {
		return sessions.Task{}, err
	}
	if err := taskrules.CheckJSON("task progress", progress); err != nil {
		return sessions.Task{}, fmt.Errorf("%s: %w", op, err)
	}
	t, ok, err := s.updateTask(ctx, true, `UPDATE tasks SET runner_expires_at = now() + $3 * interval '1 microsecond',
			progress = CASE WHEN $4::text IS NOT NULL AND status = 'working' THEN $4::text ELSE progress END,
			updated_at = CASE WHEN $4::text IS NOT NULL AND status = 'working' THEN now() ELSE updated_at END
		WHERE id = $1 AND runner = $2 AND `+visible, id, runner, micros(ttl), nullJSON(progress))
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
	if needLive {
		// The update judged the lease lapsed by the database clock.
		return sessions.Task{}, fmt.Errorf("%s for runner %q: the lease lapsed: %w", op, runner, sessions.ErrLeaseLost)
	}
	return sessions.Task{}, fmt.Errorf("%s: the task changed meanwhile; try again", op)
}

// CommitTask implements [sessions.TaskStore].
func (s *Store) CommitTask(ctx context.Context, id, runner string) (sessions.Task, error) {
	op := fmt.Sprintf("commit task %q", id)
	if err := taskrules.CheckRunner(op, id, runner); err != nil {
		return sessions.Task{}, err
	}
	t, ok, err := s.updateTask(ctx, false, `UPDATE tasks SET committing = true
		WHERE id = $1 AND runner = $2 AND status = 'working' AND runner_expires_at > now()`, id, runner)
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
	t, ok, err := s.updateTask(ctx, false, `UPDATE tasks SET status = $3, status_message = $4, result = $5, updated_at = now()
		WHERE id = $1 AND runner = $2 AND status = 'working' AND ($3 <> 'cancelled' OR NOT committing)`,
		id, runner, status, message, nullJSON(result))
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
	var n int64
	err := s.run(ctx, func(q querier) error {
		tag, err := q.Exec(ctx, `UPDATE tasks SET status = 'failed', status_message = $1, result = $2, updated_at = now()
			WHERE status = 'working' AND ((runner <> '' AND runner_expires_at <= now())
				OR (runner = '' AND created_at <= now() - $3 * interval '1 microsecond'))`,
			message, nullJSON(result), micros(unclaimed))
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return int(n), nil
}

// PurgeExpiredTasks implements [sessions.TaskStore].
func (s *Store) PurgeExpiredTasks(ctx context.Context) (int, error) {
	var n int64
	err := s.run(ctx, func(q querier) error {
		tag, err := q.Exec(ctx, `DELETE FROM tasks WHERE status <> 'working' AND expires_at <= now()`)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge expired tasks: %w", err)
	}
	return int(n), nil
}
