package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/input"
)

// AllowForSession implements [sessions.Store]: one row per session and
// tool, dropped with the session (foreign-key cascade).
func (s *Store) AllowForSession(ctx context.Context, sessionID, tool string, by sessions.SourceAuthority) error {
	granted, err := input.Allow(sessionID, tool, by)
	if err != nil {
		return err
	}
	var found bool
	err = s.run(ctx, func(q querier) error {
		// One statement: idempotent, so run may retry it.
		return q.QueryRow(ctx, `WITH s AS (SELECT id FROM sessions WHERE id = $1),
			ins AS (
				INSERT INTO session_allowances (session_id, tool, granted_by)
				SELECT id, $2, $3::jsonb FROM s
				ON CONFLICT (session_id, tool) DO NOTHING
			)
			SELECT EXISTS (SELECT 1 FROM s)`, sessionID, tool, string(granted)).Scan(&found)
	})
	if err != nil {
		return fmt.Errorf("allow %q for session %q: %w", tool, sessionID, err)
	}
	if !found {
		return fmt.Errorf("allow %q for session %q: %w", tool, sessionID, sessions.ErrNotFound)
	}
	return nil
}

// SessionAllowances implements [sessions.Store].
func (s *Store) SessionAllowances(ctx context.Context, sessionID string) ([]string, error) {
	out := []string{}
	if sessions.HasNUL(sessionID) {
		return out, nil
	}
	err := s.run(ctx, func(q querier) error {
		out = out[:0]
		rows, err := q.Query(ctx, `SELECT tool FROM session_allowances WHERE session_id = $1 ORDER BY tool`, sessionID)
		if err != nil {
			return err
		}
		tools, err := pgx.CollectRows(rows, pgx.RowTo[string])
		out = append(out, tools...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the standing approvals of session %q: %w", sessionID, err)
	}
	return out, nil
}
