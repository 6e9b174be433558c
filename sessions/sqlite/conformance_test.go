package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/storetest"
)

func openTemp(t *testing.T) sessions.Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), DefaultFileName))
}

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	st, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%q) error: %v", path, err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close error: %v", err)
		}
	})
	return st
}

// tamperer edits the audit table through the store's own write connection,
// as anyone with the file could.
type tamperer struct{ db *sql.DB }

func (tm tamperer) exec(ctx context.Context, q string, args ...any) error {
	res, err := tm.db.ExecContext(ctx, q, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%s: no row changed", q)
	}
	return nil
}

func (tm tamperer) EditAuditPayload(ctx context.Context, id int64, payload string) error {
	return tm.exec(ctx, `UPDATE audit_log SET payload = ? WHERE id = ?`, payload, id)
}

func (tm tamperer) DeleteAudit(ctx context.Context, id int64) error {
	return tm.exec(ctx, `DELETE FROM audit_log WHERE id = ?`, id)
}

func (tm tamperer) SwapAudit(ctx context.Context, a, b int64) error {
	tx, err := tm.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	type row struct {
		ts                                            int64
		typ, origin, session, payload, prevHash, hash string
	}
	var ra, rb row
	for _, x := range []struct {
		id int64
		r  *row
	}{{a, &ra}, {b, &rb}} {
		if err := tx.QueryRowContext(ctx, `SELECT ts, type, origin, session_id, payload, prev_hash, hash FROM audit_log WHERE id = ?`, x.id).
			Scan(&x.r.ts, &x.r.typ, &x.r.origin, &x.r.session, &x.r.payload, &x.r.prevHash, &x.r.hash); err != nil {
			return err
		}
	}
	for _, x := range []struct {
		id int64
		r  row
	}{{a, rb}, {b, ra}} {
		if _, err := tx.ExecContext(ctx, `UPDATE audit_log SET ts = ?, type = ?, origin = ?, session_id = ?, payload = ?, prev_hash = ?, hash = ? WHERE id = ?`,
			x.r.ts, x.r.typ, x.r.origin, x.r.session, x.r.payload, x.r.prevHash, x.r.hash, x.id); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func TestConformance(t *testing.T) {
	storetest.Run(t, openTemp,
		storetest.WithSecondHandle(func(t *testing.T, s sessions.Store) sessions.Store {
			return openAt(t, s.(*Store).Path())
		}),
		storetest.WithTamperer(func(t *testing.T, s sessions.Store) storetest.Tamperer {
			return tamperer{db: s.(*Store).w}
		}),
	)
}
