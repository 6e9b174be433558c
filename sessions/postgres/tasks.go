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

// taskRules, embedded in Store, gives it the sessions.TaskStore methods.
type taskRules = taskrules.Tasks

// newTaskRules returns the task rules of s, over its taskSQL.
func newTaskRules(s *Store) taskRules { return taskrules.New(taskSQL{s}, true) }

// The rules around the SQL below are taskrules.Tasks', which Store embeds.
// Every compare-and-set below is one conditional UPDATE ... RETURNING: an
// UPDATE that waits for another's row lock re-checks its WHERE on the row
// the other committed (READ COMMITTED), so of two racing updates, whatever
// connection or process each runs on, the second sees the first's row.
// Times are judged by the database clock (now()). The updates that are
// not idempotent run with once, retried only when nothing was sent; the
// idempotent ones and reads run with run. The
// database's clock judges leases (see taskrules.New).

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

// taskSQL is the PostgreSQL [taskrules.Backend] of a Store.
type taskSQL struct{ s *Store }

// Insert implements [taskrules.Backend] in one round trip: its statements
// go as one batch, which the server runs as one implicit transaction (a
// failing statement rolls back those before it). With a cap, the batch
// first takes an advisory lock keyed by the schema and the client, so the
// creates of one client run one at a time; each later statement reads with
// a snapshot taken after the lock (READ COMMITTED), so the count, and the
// insert's own check of it, see the working tasks the previous creates
// committed. Without a cap the batch is the insert alone.
func (b taskSQL) Insert(ctx context.Context, op string, in sessions.NewTask) (sessions.Task, error) {
	var (
		out     sessions.Task
		working int
	)
	err := b.s.once(ctx, func(q querier) error {
		batch := &pgx.Batch{}
		if in.MaxWorking > 0 {
			batch.Queue(`SELECT pg_advisory_xact_lock(hashtextextended('openprogram.sessions.tasks:' || current_schema() || ':' || $1, 0))`, in.ClientID)
			batch.Queue(`SELECT count(*) FROM tasks WHERE client_id = $1 AND status = 'working'`, in.ClientID)
		}
		// $7 <= 0: no cap. Under the lock no other create of the client
		// commits between the count and the insert, so an insert its check
		// refuses is one the count refuses too.
		batch.Queue(`INSERT INTO tasks (id, client_id, status, request, created_at, updated_at, ttl, expires_at, runner, runner_expires_at)
			SELECT $1, $2, 'working', $3, now(), now(), $4::bigint, now() + $4::bigint * interval '1 microsecond',
				$5::text, CASE WHEN $5::text = '' THEN NULL ELSE now() + $6::bigint * interval '1 microsecond' END
			WHERE $7::int <= 0 OR (SELECT count(*) FROM tasks WHERE client_id = $2 AND status = 'working') < $7::int
			ON CONFLICT (id) DO NOTHING RETURNING `+taskrules.Columns,
			in.ID, in.ClientID, string(in.Request), micros(in.TTL), in.Runner, micros(in.Lease), max(in.MaxWorking, 0))
		br := q.SendBatch(ctx, batch)
		defer br.Close()
		if in.MaxWorking > 0 {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("%s: take the client's task lock: %w", op, err)
			}
			if err := br.QueryRow().Scan(&working); err != nil {
				return fmt.Errorf("%s: count working tasks: %w", op, err)
			}
		}
		var err error
		out, err = scanTask(br.QueryRow())
		switch {
		case errors.Is(err, pgx.ErrNoRows) && in.MaxWorking > 0 && working >= in.MaxWorking:
			return taskrules.TooMany(op, working, in.MaxWorking)
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%s: %w", op, sessions.ErrExists)
		case err != nil:
			return fmt.Errorf("%s: %w", op, err)
		}
		// The implicit transaction commits at the end of the batch: an
		// error there (the server's, at commit) is the insert's.
		return br.Close()
	})
	if err != nil {
		return sessions.Task{}, err
	}
	return out, nil
}

// Read implements [taskrules.Backend].
func (b taskSQL) Read(ctx context.Context, id string) (sessions.Task, bool, error) {
	return b.row(ctx, true, `SELECT `+taskrules.Columns+` FROM tasks WHERE id = $1 AND `+visible, id)
}

// List implements [taskrules.Backend] on the index tasks_client_idx.
func (b taskSQL) List(ctx context.Context, clientID string, after time.Time, afterID string, n int) ([]sessions.Task, error) {
	query := `SELECT ` + taskrules.ListColumns + ` FROM tasks WHERE client_id = $1 AND ` + visible
	args := []any{clientID, n}
	if afterID != "" {
		query += ` AND (created_at, id) > ($3, $4)`
		args = append(args, after, afterID)
	}
	query += ` ORDER BY created_at, id LIMIT $2`
	return queryAll(ctx, b.s, scanTask, query, args...)
}

// row runs query, one conditional UPDATE ... RETURNING (or a SELECT of)
// taskrules.Columns; found is false when the condition held for no row.
// The statement is its own transaction: no BEGIN and COMMIT round trips.
// Unless idempotent it is retried only when nothing was sent (once): a
// connection that died after the statement went out leaves its outcome
// unknown.
func (b taskSQL) row(ctx context.Context, idempotent bool, query string, args ...any) (sessions.Task, bool, error) {
	var t sessions.Task
	one := func(q querier) error {
		var err error
		t, err = scanTask(q.QueryRow(ctx, query, args...))
		return err
	}
	var err error
	if idempotent {
		err = b.s.run(ctx, one)
	} else {
		err = b.s.once(ctx, one)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.Task{}, false, nil
	}
	if err != nil {
		return sessions.Task{}, false, err
	}
	return t, true, nil
}

// Cancel implements [taskrules.Backend].
func (b taskSQL) Cancel(ctx context.Context, clientID, id string) (sessions.Task, bool, error) {
	return b.row(ctx, false, `UPDATE tasks SET status = 'cancelled', updated_at = now()
		WHERE id = $1 AND client_id = $2 AND status = 'working' AND NOT committing
		RETURNING `+taskrules.Columns, id, clientID)
}

// Claim implements [taskrules.Backend]. It is idempotent for runner.
func (b taskSQL) Claim(ctx context.Context, id, runner string, ttl time.Duration) (sessions.Task, bool, error) {
	return b.row(ctx, true, `UPDATE tasks SET runner = $2, runner_expires_at = now() + $3 * interval '1 microsecond'
		WHERE id = $1 AND status = 'working' AND NOT committing
		AND (runner = '' OR runner = $2 OR runner_expires_at <= now())
		RETURNING `+taskrules.Columns, id, runner, micros(ttl))
}

// Renew implements [taskrules.Backend]. It is idempotent.
func (b taskSQL) Renew(ctx context.Context, id, runner string, ttl time.Duration, progress json.RawMessage) (sessions.Task, bool, error) {
	return b.row(ctx, true, `UPDATE tasks SET runner_expires_at = now() + $3 * interval '1 microsecond',
			progress = CASE WHEN $4::text IS NOT NULL AND status = 'working' THEN $4::text ELSE progress END,
			updated_at = CASE WHEN $4::text IS NOT NULL AND status = 'working' THEN now() ELSE updated_at END
		WHERE id = $1 AND runner = $2 AND `+visible+`
		RETURNING `+taskrules.Columns, id, runner, micros(ttl), nullJSON(progress))
}

// Commit implements [taskrules.Backend].
func (b taskSQL) Commit(ctx context.Context, id, runner string) (sessions.Task, bool, error) {
	return b.row(ctx, false, `UPDATE tasks SET committing = true
		WHERE id = $1 AND runner = $2 AND status = 'working' AND runner_expires_at > now()
		RETURNING `+taskrules.Columns, id, runner)
}

// Finish implements [taskrules.Backend].
func (b taskSQL) Finish(ctx context.Context, id, runner, status, message string, result json.RawMessage) (sessions.Task, bool, error) {
	return b.row(ctx, false, `UPDATE tasks SET status = $3, status_message = $4, result = $5, updated_at = now()
		WHERE id = $1 AND runner = $2 AND status = 'working' AND ($3 <> 'cancelled' OR NOT committing)
		RETURNING `+taskrules.Columns, id, runner, status, message, nullJSON(result))
}

// FailAbandoned implements [taskrules.Backend].
func (b taskSQL) FailAbandoned(ctx context.Context, message string, result json.RawMessage, unclaimed time.Duration) (int, error) {
	var n int64
	err := b.s.run(ctx, func(q querier) error {
		tag, err := q.Exec(ctx, `UPDATE tasks SET status = 'failed', status_message = $1, result = $2, updated_at = now()
			WHERE status = 'working' AND ((runner <> '' AND runner_expires_at <= now() AND NOT committing)
				OR (runner = '' AND created_at <= now() - $3 * interval '1 microsecond'))`,
			message, nullJSON(result), micros(unclaimed))
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}

// AbandonedCommits implements [taskrules.Backend].
func (b taskSQL) AbandonedCommits(ctx context.Context, n int) ([]sessions.Task, error) {
	return queryAll(ctx, b.s, scanTask, `SELECT `+taskrules.Columns+` FROM tasks
		WHERE status = 'working' AND committing AND runner_expires_at <= now()
		ORDER BY created_at, id LIMIT $1`, n)
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
