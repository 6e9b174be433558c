package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/input"
)

// AllowForSession implements [sessions.Store]: one row per session and
// tool, dropped with the session (foreign-key cascade).
func (s *Store) AllowForSession(ctx context.Context, sessionID, tool string, by sessions.SourceAuthority) error {
	return input.Allow(sessionID, tool, by, func(granted string) (found bool, err error) {
		err = s.writeTx(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO session_allowances (session_id, tool, granted_by, created_at)
			SELECT id, ?, ?, ? FROM sessions WHERE id = ?
			ON CONFLICT (session_id, tool) DO NOTHING`, tool, granted, nowMicros(), sessionID); err != nil {
				return err
			}
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, sessionID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			found = err == nil
			return err
		})
		return found, err
	})
}

// SessionAllowances implements [sessions.Store].
func (s *Store) SessionAllowances(ctx context.Context, sessionID string) ([]string, error) {
	return input.Allowances(sessionID, func() (tools []string, err error) {
		st, err := s.readStmt(ctx, `SELECT tool FROM session_allowances WHERE session_id = ? ORDER BY tool`)
		if err != nil {
			return nil, err
		}
		err = eachRow(func() (*sql.Rows, error) { return st.QueryContext(ctx, sessionID) },
			func(r scanner) (tool string, err error) { return tool, r.Scan(&tool) },
			func(tool string) bool { tools = append(tools, tool); return true })
		return tools, err
	})
}
