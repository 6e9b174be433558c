package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/input"
	"github.com/openprogram/openprogram/sessions/internal/rowerr"
)

func micros(t time.Time) int64     { return t.UnixMicro() }
func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }
func nowMicros() int64             { return time.Now().UnixMicro() }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

const sessionColumns = `id, agent_id, title, source, created_at, updated_at, coalesce(head_id, ''), archived`

// scanner reads one row (rowerr.Scanner).
type scanner = rowerr.Scanner

func scanSession(r scanner) (sessions.Session, error) {
	var (
		s                sessions.Session
		created, updated int64
		archived         int
	)
	if err := r.Scan(&s.ID, &s.AgentID, &s.Title, &s.Source, &created, &updated, &s.HeadID, &archived); err != nil {
		return sessions.Session{}, err
	}
	s.CreatedAt, s.UpdatedAt, s.Archived = fromMicros(created), fromMicros(updated), archived != 0
	return s, nil
}

// CreateSession implements [sessions.Store].
func (s *Store) CreateSession(ctx context.Context, in sessions.Session) (sessions.Session, error) {
	if err := in.CheckText(); err != nil {
		return sessions.Session{}, err
	}
	if in.ID == "" {
		return sessions.Session{}, errors.New("create session: empty id; the caller chooses the session id")
	}
	now := nowMicros()
	created, updated := now, now
	if !in.CreatedAt.IsZero() {
		created = micros(in.CreatedAt)
	}
	if !in.UpdatedAt.IsZero() {
		updated = micros(in.UpdatedAt)
	} else if !in.CreatedAt.IsZero() {
		updated = created
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO sessions (id, agent_id, title, source, created_at, updated_at, head_id, archived)
		VALUES (?, ?, ?, ?, ?, ?, NULL, ?) ON CONFLICT (id) DO NOTHING`,
		in.ID, in.AgentID, in.Title, in.Source, created, updated, boolInt(in.Archived))
	if err := oneRow(fmt.Sprintf("create session %q", in.ID), sessions.ErrExists, res, err); err != nil {
		return sessions.Session{}, err
	}
	out := in
	out.HeadID = ""
	out.CreatedAt, out.UpdatedAt = fromMicros(created), fromMicros(updated)
	return out, nil
}

// Read queries prepared once (see readStmt).
const (
	getSessionQuery   = `SELECT ` + sessionColumns + ` FROM sessions WHERE id = ?`
	listSessionsQuery = `SELECT id, agent_id, title, source, created_at, updated_at, coalesce(head_id, '')
		FROM sessions INDEXED BY sessions_list
		WHERE archived = 0 ORDER BY updated_at DESC, id DESC LIMIT ?`
)

// GetSession implements [sessions.Store].
func (s *Store) GetSession(ctx context.Context, id string) (sessions.Session, error) {
	return rowerr.Get("session", id, sql.ErrNoRows, func() (sessions.Session, error) {
		st, err := s.readStmt(ctx, getSessionQuery)
		if err != nil {
			return sessions.Session{}, err
		}
		return scanSession(st.QueryRowContext(ctx, id))
	})
}

// ListSessions implements [sessions.Store]. It walks the partial index
// sessions_list and stops after limit rows.
func (s *Store) ListSessions(ctx context.Context, limit int) ([]sessions.Session, error) {
	if limit <= 0 {
		return []sessions.Session{}, nil
	}
	st, err := s.readStmt(ctx, listSessionsQuery)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	rows, err := st.QueryContext(ctx, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	defer rows.Close()
	// Rows are scanned straight into out, through one dest slice: no
	// per-row Session, argument slice or integer escapes to the heap.
	out := make([]sessions.Session, 0, min(limit, 128))
	// The query reads no archived column: it lists unarchived sessions.
	var (
		created, updated int64
		dest             = []any{nil, nil, nil, nil, &created, &updated, nil}
	)
	for rows.Next() {
		out = append(out, sessions.Session{})
		sess := &out[len(out)-1]
		dest[0], dest[1], dest[2], dest[3], dest[6] = &sess.ID, &sess.AgentID, &sess.Title, &sess.Source, &sess.HeadID
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		sess.CreatedAt, sess.UpdatedAt = fromMicros(created), fromMicros(updated)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// UpdateSession implements [sessions.Store].
func (s *Store) UpdateSession(ctx context.Context, id string, u sessions.SessionUpdate) (sessions.Session, error) {
	if err := input.Update(id, u); err != nil {
		return sessions.Session{}, err
	}
	var title, archived any
	if u.Title != nil {
		title = *u.Title
	}
	if u.Archived != nil {
		archived = boolInt(*u.Archived)
	}
	got, err := scanSession(s.w.QueryRowContext(ctx, `UPDATE sessions SET
			title = coalesce(?1, title),
			archived = coalesce(?2, archived),
			updated_at = CASE WHEN ?1 IS NULL AND ?2 IS NULL THEN updated_at ELSE max(updated_at, ?3) END
		WHERE id = ?4 RETURNING `+sessionColumns, title, archived, nowMicros(), id))
	return rowerr.One(fmt.Sprintf("update session %q", id), sql.ErrNoRows, got, err)
}

// DeleteSession implements [sessions.Store]. Messages and standing
// approvals go with the session (foreign-key cascade), and so does its
// turn lease.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if sessions.HasNUL(id) {
		return fmt.Errorf("session: %w", sessions.ErrNotFound)
	}
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		if err := oneRow(fmt.Sprintf("delete session %q", id), sessions.ErrNotFound, res, err); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM turn_leases WHERE session_id = ?`, id); err != nil {
			return fmt.Errorf("delete session %q: drop lease: %w", id, err)
		}
		return nil
	})
}

// eachRow runs query and feeds its rows, read by scan, to fn until fn
// returns false (rowerr.Each).
func eachRow[T any](query func() (*sql.Rows, error), scan func(scanner) (T, error), fn func(T) bool) error {
	rows, err := query()
	if err != nil {
		return err
	}
	return rowerr.Each(rows, func() { rows.Close() }, scan, fn)
}

// oneRow is the outcome of op, a statement (res, err) that changes one
// row: an error wrapped with op, none wrapped with op when it changed
// nothing, or nil.
func oneRow(op string, none error, res sql.Result, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, none)
	}
	return nil
}

// writeTx runs fn in a BEGIN IMMEDIATE transaction on the writer connection.
func (s *Store) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin write transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// readTx runs fn in a read transaction: one consistent WAL snapshot.
func (s *Store) readTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin read transaction: %w", err)
	}
	defer tx.Rollback()
	return fn(tx)
}
