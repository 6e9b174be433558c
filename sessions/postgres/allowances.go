package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/input"
)

// AllowForSession implements [sessions.Store]: one row per session and
// tool, dropped with the session (foreign-key cascade).
func (s *Store) AllowForSession(ctx context.Context, sessionID, tool string, by sessions.SourceAuthority) error {
	return input.Allow(sessionID, tool, by, func(granted string) (found bool, err error) {
		err = s.run(ctx, func(q querier) error {
			// One statement: idempotent, so run may retry it.
			return q.QueryRow(ctx, `WITH s AS (SELECT id FROM sessions WHERE id = $1),
			ins AS (
				INSERT INTO session_allowances (session_id, tool, granted_by)
				SELECT id, $2, $3::jsonb FROM s
				ON CONFLICT (session_id, tool) DO NOTHING
			)
			SELECT EXISTS (SELECT 1 FROM s)`, sessionID, tool, granted).Scan(&found)
		})
		return found, err
	})
}

// SessionAllowances implements [sessions.Store].
func (s *Store) SessionAllowances(ctx context.Context, sessionID string) ([]string, error) {
	return input.Allowances(sessionID, func() ([]string, error) {
		return queryAll(ctx, s, func(r pgx.Row) (tool string, err error) { return tool, r.Scan(&tool) },
			`SELECT tool FROM session_allowances WHERE session_id = $1 ORDER BY tool`, sessionID)
	})
}
