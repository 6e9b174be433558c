package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
	"github.com/openprogram/openprogram/sessions/storetest"
)

func openTemp(t *testing.T) sessions.Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), DefaultFileName))
}

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	return openWith(t, path, &sessions.Options{AuditKey: storetest.Key})
}

func openWith(t *testing.T, path string, opts *sessions.Options) *Store {
	t.Helper()
	st, err := OpenWith(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("OpenWith(%q) error: %v", path, err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close error: %v", err)
		}
	})
	return st
}

// tamperer edits the audit tables through the store's own write
// connection, as anyone with the file could: it drops the append-only
// triggers for each change and puts them back after.
type tamperer struct{ db *sql.DB }

func (tm tamperer) exec(ctx context.Context, q string, args ...any) error {
	return tm.tamper(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%s: no row changed", q)
		}
		return nil
	})
}

func (tm tamperer) tamper(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := tm.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := withoutAuditTriggers(ctx, tx, func() error { return fn(tx) }); err != nil {
		return err
	}
	return tx.Commit()
}

func (tm tamperer) EditAuditPayload(ctx context.Context, id int64, payload string) error {
	return tm.exec(ctx, `UPDATE audit_log SET payload = ? WHERE id = ?`, payload, id)
}

func (tm tamperer) DeleteAudit(ctx context.Context, id int64) error {
	return tm.exec(ctx, `DELETE FROM audit_log WHERE id = ?`, id)
}

func (tm tamperer) SwapAudit(ctx context.Context, a, b int64) error {
	return tm.exec(ctx, `UPDATE audit_log AS r SET ts = o.ts, type = o.type, origin = o.origin, session_id = o.session_id,
		payload = o.payload, prev_hash = o.prev_hash, hash = o.hash, sig = o.sig
		FROM (SELECT * FROM audit_log) AS o WHERE (r.id = ? AND o.id = ?) OR (r.id = ? AND o.id = ?)`, a, b, b, a)
}

func (tm tamperer) InsertAudit(ctx context.Context, r sessions.AuditRecord) error {
	return tm.exec(ctx, `INSERT INTO audit_log (id, ts, type, origin, session_id, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.TS.UnixMicro(), r.Type, r.Origin, r.SessionID, string(r.Payload), r.PrevHash, r.Hash)
}

func (tm tamperer) RewriteAudit(ctx context.Context, r sessions.AuditRecord) error {
	return tm.exec(ctx, `UPDATE audit_log SET ts = ?, type = ?, origin = ?, session_id = ?, payload = ?, prev_hash = ?, hash = ? WHERE id = ?`,
		r.TS.UnixMicro(), r.Type, r.Origin, r.SessionID, string(r.Payload), r.PrevHash, r.Hash, r.ID)
}

func (tm tamperer) AuditHead(ctx context.Context) (storetest.HeadRow, error) {
	var h storetest.HeadRow
	err := tm.db.QueryRowContext(ctx, `SELECT last_id, last_hash, key_id, head_mac FROM audit_head`).Scan(&h.LastID, &h.LastHash, &h.KeyID, &h.MAC)
	return h, err
}

func (tm tamperer) SetAuditHead(ctx context.Context, h storetest.HeadRow) error {
	return tm.exec(ctx, `UPDATE audit_head SET last_id = ?, last_hash = ?, key_id = ?, head_mac = ?`, h.LastID, h.LastHash, h.KeyID, h.MAC)
}

func TestConformance(t *testing.T) {
	storetest.Run(t,
		func(t *testing.T, opts *sessions.Options) sessions.Store {
			return openWith(t, filepath.Join(t.TempDir(), DefaultFileName), opts)
		},
		storetest.WithSecondHandle(func(t *testing.T, s sessions.Store, opts *sessions.Options) sessions.Store {
			return openWith(t, s.(*Store).Path(), opts)
		}),
		storetest.WithTamperer(func(t *testing.T, s sessions.Store) storetest.Tamperer {
			return tamperer{db: s.(*Store).w}
		}),
	)
}

func (tm tamperer) AuditWriters(ctx context.Context) ([]auditchain.Writer, error) {
	var out []auditchain.Writer
	err := tm.tamper(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = auditTx{tx}.Writers(ctx)
		return err
	})
	return out, err
}

func (tm tamperer) SetAuditWriter(ctx context.Context, w auditchain.Writer) error {
	return tm.exec(ctx, `UPDATE audit_writers SET key_id = ?, base_id = ?, base_hash = ?, anchor_id = ?, anchor_hash = ?, last_seq = ?, last_hash = ?, head_sig = ? WHERE writer_id = ?`,
		w.KeyID, w.BaseID, w.BaseHash, w.AnchorID, w.AnchorHash, w.Seq, w.Hash, w.Sig, w.ID)
}

func (tm tamperer) DeleteAuditWriter(ctx context.Context, id string) error {
	return tm.exec(ctx, `DELETE FROM audit_writers WHERE writer_id = ?`, id)
}

func (tm tamperer) SetAuditKeyRow(ctx context.Context, k sessions.AuditKey) error {
	var revoked any
	if k.Revoked {
		revoked = time.Now().UnixMicro()
	}
	return tm.exec(ctx, `UPDATE audit_keys SET public_key = ?, revoked_at = ? WHERE key_id = ?`, k.PublicKey, revoked, k.ID)
}

func (tm tamperer) DeleteAuditKeyRow(ctx context.Context, id string) error {
	return tm.exec(ctx, `DELETE FROM audit_keys WHERE key_id = ?`, id)
}
