package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO session_allowances (session_id, tool, granted_by, created_at)
			SELECT id, ?, ?, ? FROM sessions WHERE id = ?
			ON CONFLICT (session_id, tool) DO NOTHING`, tool, string(granted), nowMicros(), sessionID); err != nil {
			return fmt.Errorf("allow %q for session %q: %w", tool, sessionID, err)
		}
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, sessionID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("allow %q for session %q: %w", tool, sessionID, sessions.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("allow %q for session %q: %w", tool, sessionID, err)
		}
		return nil
	})
}

// SessionAllowances implements [sessions.Store].
func (s *Store) SessionAllowances(ctx context.Context, sessionID string) ([]string, error) {
	out := []string{}
	if sessions.HasNUL(sessionID) {
		return out, nil
	}
	st, err := s.readStmt(ctx, `SELECT tool FROM session_allowances WHERE session_id = ? ORDER BY tool`)
	if err != nil {
		return nil, fmt.Errorf("read the standing approvals of session %q: %w", sessionID, err)
	}
	err = eachRow(func() (*sql.Rows, error) { return st.QueryContext(ctx, sessionID) },
		func(r scanner) (tool string, err error) { return tool, r.Scan(&tool) },
		func(tool string) bool { out = append(out, tool); return true })
	if err != nil {
		return nil, fmt.Errorf("read the standing approvals of session %q: %w", sessionID, err)
	}
	return out, nil
}
