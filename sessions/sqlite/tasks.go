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

// taskRules, embedded in Store, gives it the sessions.TaskStore methods.
type taskRules = taskrules.Tasks

// newTaskRules returns the task rules of s, over its taskSQL.
func newTaskRules(s *Store) taskRules { return taskrules.New(taskSQL{s}, false) }

// The rules around the SQL below are taskrules.Tasks', which Store embeds.
// Every compare-and-set below is one conditional UPDATE ... RETURNING on
// the writer connection: SQLite runs one write at a time across processes,
// so of two racing updates the second sees the first's row. Times are
// judged by this process's clock, in Unix microseconds.

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

// taskSQL is the SQLite [taskrules.Backend] of a Store.
type taskSQL struct{ s *Store }

// Insert implements [taskrules.Backend]. The cap is counted and the row
// inserted in one write transaction, which SQLite serialises across
// connections and processes.
func (b taskSQL) Insert(ctx context.Context, op string, in sessions.NewTask) (sessions.Task, error) {
	now := nowMicros()
	ttl := durMicros(in.TTL)
	err := b.s.writeTx(ctx, func(tx *sql.Tx) error {
		if in.MaxWorking > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM tasks INDEXED BY tasks_working
				WHERE client_id = ? AND status = 'working'`, in.ClientID).Scan(&n); err != nil {
				return fmt.Errorf("%s: count working tasks: %w", op, err)
			}
			if n >= in.MaxWorking {
				return taskrules.TooMany(op, n, in.MaxWorking)
			}
		}
		var leased int64 // runner_expires_at: 0 while unclaimed
		if in.Runner != "" {
			leased = now + durMicros(in.Lease)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, client_id, status, request, created_at, updated_at, ttl, expires_at, runner, runner_expires_at)
			VALUES (?, ?, 'working', ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			in.ID, in.ClientID, string(in.Request), now, now, ttl, now+ttl, in.Runner, leased)
		return oneRow(op, sessions.ErrExists, res, err)
	})
	if err != nil {
		return sessions.Task{}, err
	}
	t := sessions.Task{ID: in.ID, ClientID: in.ClientID, Status: sessions.TaskWorking, Request: in.Request,
		CreatedAt: fromMicros(now), UpdatedAt: fromMicros(now), TTL: time.Duration(ttl) * time.Microsecond, Runner: in.Runner}
	if in.Runner != "" {
		t.RunnerExpiresAt = fromMicros(now + durMicros(in.Lease))
	}
	return t, nil
}

// Read implements [taskrules.Backend].
func (b taskSQL) Read(ctx context.Context, id string) (sessions.Task, bool, error) {
	return b.one(b.s.r.QueryRowContext(ctx, `SELECT `+taskrules.Columns+` FROM tasks WHERE id = :id AND `+visible,
		sql.Named("id", id), sql.Named("now", nowMicros())))
}

// one scans row, found false for no row.
func (taskSQL) one(row *sql.Row) (sessions.Task, bool, error) {
	t, err := scanTask(row)
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.Task{}, false, nil
	}
	if err != nil {
		return sessions.Task{}, false, err
	}
	return t, true, nil
}

// List implements [taskrules.Backend] on the index tasks_client.
func (b taskSQL) List(ctx context.Context, clientID string, after time.Time, afterID string, n int) ([]sessions.Task, error) {
	from := int64(-1 << 63)
	if afterID != "" {
		from = micros(after)
	}
	var tasks []sessions.Task
	err := eachRow(func() (*sql.Rows, error) {
		return b.s.r.QueryContext(ctx, `SELECT `+taskrules.ListColumns+` FROM tasks INDEXED BY tasks_client
			WHERE client_id = :client AND (created_at, id) > (:after, :after_id) AND `+visible+`
			ORDER BY created_at, id LIMIT :limit`,
			sql.Named("client", clientID), sql.Named("after", from), sql.Named("after_id", afterID),
			sql.Named("now", nowMicros()), sql.Named("limit", n))
	}, scanTask, func(t sessions.Task) bool { tasks = append(tasks, t); return true })
	return tasks, err
}

// update runs one conditional UPDATE ... RETURNING taskrules.Columns on the
// writer; found is false when the condition held for no row.
func (b taskSQL) update(ctx context.Context, query string, args ...any) (sessions.Task, bool, error) {
	return b.one(b.s.w.QueryRowContext(ctx, query+` RETURNING `+taskrules.Columns, args...))
}

// Cancel implements [taskrules.Backend].
func (b taskSQL) Cancel(ctx context.Context, clientID, id string) (sessions.Task, bool, error) {
	return b.update(ctx, `UPDATE tasks SET status = 'cancelled', updated_at = :now
		WHERE id = :id AND client_id = :client AND status = 'working' AND committing = 0`,
		sql.Named("id", id), sql.Named("client", clientID), sql.Named("now", nowMicros()))
}

// Claim implements [taskrules.Backend].
func (b taskSQL) Claim(ctx context.Context, id, runner string, ttl time.Duration) (sessions.Task, bool, error) {
	now := nowMicros()
	return b.update(ctx, `UPDATE tasks SET runner = :runner, runner_expires_at = :until
		WHERE id = :id AND status = 'working' AND committing = 0
		AND (runner = '' OR runner = :runner OR runner_expires_at <= :now)`,
		sql.Named("id", id), sql.Named("runner", runner), sql.Named("until", now+durMicros(ttl)), sql.Named("now", now))
}

// Renew implements [taskrules.Backend].
func (b taskSQL) Renew(ctx context.Context, id, runner string, ttl time.Duration, progress json.RawMessage) (sessions.Task, bool, error) {
	now := nowMicros()
	return b.update(ctx, `UPDATE tasks SET runner_expires_at = :until,
			progress = CASE WHEN :progress IS NOT NULL AND status = 'working' THEN :progress ELSE progress END,
			updated_at = CASE WHEN :progress IS NOT NULL AND status = 'working' THEN :now ELSE updated_at END
		WHERE id = :id AND runner = :runner AND `+visible,
		sql.Named("id", id), sql.Named("runner", runner), sql.Named("until", now+durMicros(ttl)),
		sql.Named("progress", nullJSON(progress)), sql.Named("now", now))
}

// Commit implements [taskrules.Backend].
func (b taskSQL) Commit(ctx context.Context, id, runner string) (sessions.Task, bool, error) {
	return b.update(ctx, `UPDATE tasks SET committing = 1
		WHERE id = :id AND runner = :runner AND status = 'working' AND runner_expires_at > :now`,
		sql.Named("id", id), sql.Named("runner", runner), sql.Named("now", nowMicros()))
}

// Finish implements [taskrules.Backend].
func (b taskSQL) Finish(ctx context.Context, id, runner, status, message string, result json.RawMessage) (sessions.Task, bool, error) {
	return b.update(ctx, `UPDATE tasks SET status = :status, status_message = :message, result = :result, updated_at = :now
		WHERE id = :id AND runner = :runner AND status = 'working' AND (:status <> 'cancelled' OR committing = 0)`,
		sql.Named("id", id), sql.Named("runner", runner), sql.Named("status", status), sql.Named("message", message),
		sql.Named("result", nullJSON(result)), sql.Named("now", nowMicros()))
}

// FailAbandoned implements [taskrules.Backend].
func (b taskSQL) FailAbandoned(ctx context.Context, message string, result json.RawMessage, unclaimed time.Duration) (int, error) {
	now := nowMicros()
	res, err := b.s.w.ExecContext(ctx, `UPDATE tasks INDEXED BY tasks_lapsed
		SET status = 'failed', status_message = :message, result = :result, updated_at = :now
		WHERE status = 'working' AND ((runner <> '' AND runner_expires_at <= :now AND committing = 0) OR (runner = '' AND created_at <= :unclaimed))`,
		sql.Named("message", message), sql.Named("result", nullJSON(result)), sql.Named("now", now),
		sql.Named("unclaimed", now-durMicros(unclaimed)))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// AbandonedCommits implements [taskrules.Backend].
func (b taskSQL) AbandonedCommits(ctx context.Context, n int) ([]sessions.Task, error) {
	var tasks []sessions.Task
	err := eachRow(func() (*sql.Rows, error) {
		return b.s.r.QueryContext(ctx, `SELECT `+taskrules.Columns+` FROM tasks INDEXED BY tasks_lapsed
			WHERE status = 'working' AND committing = 1 AND runner_expires_at <= :now
			ORDER BY created_at, id LIMIT :limit`, sql.Named("now", nowMicros()), sql.Named("limit", n))
	}, scanTask, func(t sessions.Task) bool { tasks = append(tasks, t); return true })
	return tasks, err
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
