package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
)

// auditLog, embedded in Store, gives it AppendAudit, VerifyAudit and
// CheckAuditAnchor: the chain's rules over auditTx.
type auditLog = auditchain.Log

// newAuditLog returns the audit log of s. Appends run in a write
// transaction (BEGIN IMMEDIATE), so concurrent appends (any process) chain
// one after another; verification reads one snapshot. With a signing key
// in opts, appends go to s's own writer chain (SQLite has one writer at a
// time anyway: the chain is what makes them verifiable per host).
func newAuditLog(s *Store, opts *sessions.Options) auditLog {
	in := func(begin func(context.Context, func(*sql.Tx) error) error) func(context.Context, func(auditchain.Tx) error) error {
		return func(ctx context.Context, fn func(auditchain.Tx) error) error {
			return begin(ctx, func(tx *sql.Tx) error { return fn(auditTx{tx}) })
		}
	}
	return auditchain.NewLog(s.auditKey, opts, writerStore{s}, in(s.writeTx), in(s.readTx))
}

// writerStore is the SQLite [auditchain.WriterStore].
type writerStore struct{ s *Store }

// StartWriter implements [auditchain.WriterStore].
func (ws writerStore) StartWriter(ctx context.Context, key sessions.AuditKey) (stored sessions.AuditKey, added bool, shared auditchain.Head, err error) {
	err = ws.s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO audit_keys (key_id, public_key, label, added_at) VALUES (?, ?, ?, ?) ON CONFLICT (key_id) DO NOTHING`,
			key.ID, key.PublicKey, key.Label, nowMicros())
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		added = n == 1
		var revoked sql.NullInt64
		var at int64
		if err := tx.QueryRowContext(ctx, `SELECT key_id, public_key, label, added_at, revoked_at FROM audit_keys WHERE key_id = ?`, key.ID).
			Scan(&stored.ID, &stored.PublicKey, &stored.Label, &at, &revoked); err != nil {
			return err
		}
		stored.Added, stored.Revoked = fromMicros(at), revoked.Valid
		shared, err = auditTx{tx}.Head(ctx, false)
		return err
	})
	return stored, added, shared, err
}

// Flush implements [auditchain.WriterStore].
func (ws writerStore) Flush(ctx context.Context, w auditchain.Writer, first bool, recs []sessions.AuditRecord) (ids []int64, revoked bool, err error) {
	err = ws.s.writeTx(ctx, func(tx *sql.Tx) error {
		var r sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT revoked_at FROM audit_keys WHERE key_id = ?`, w.KeyID).Scan(&r); err != nil {
			return err
		}
		if revoked = r.Valid; revoked {
			return nil
		}
		for _, rec := range recs {
			var id int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO audit_log (ts, type, origin, session_id, payload, prev_hash, hash, writer_id, seq, sig)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
				micros(rec.TS), rec.Type, rec.Origin, rec.SessionID, string(rec.Payload), rec.PrevHash, rec.Hash, rec.Writer, rec.Seq, rec.Sig).Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		if first {
			_, err := tx.ExecContext(ctx, `INSERT INTO audit_writers (writer_id, key_id, base_id, base_hash, anchor_id, anchor_hash, last_seq, last_hash, head_sig, started_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, w.ID, w.KeyID, w.BaseID, w.BaseHash, w.AnchorID, w.AnchorHash, w.Seq, w.Hash, w.Sig, micros(w.Started))
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE audit_writers SET last_seq = ?, last_hash = ?, head_sig = ? WHERE writer_id = ?`, w.Seq, w.Hash, w.Sig, w.ID)
		return err
	})
	if err != nil || revoked {
		return nil, revoked, err
	}
	return ids, false, nil
}

// WriterHead implements [auditchain.WriterStore].
func (ws writerStore) WriterHead(ctx context.Context, id string) (w auditchain.Writer, found bool, err error) {
	err = ws.s.readTx(ctx, func(tx *sql.Tx) error {
		return eachRow(func() (*sql.Rows, error) {
			return tx.QueryContext(ctx, `SELECT `+writerColumns+` FROM audit_writers WHERE writer_id = ?`, id)
		}, scanWriter, func(got auditchain.Writer) bool { w, found = got, true; return false })
	})
	return w, found, err
}

// Revoke implements [auditchain.WriterStore].
func (ws writerStore) Revoke(ctx context.Context, id string) (found bool, err error) {
	err = ws.s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE audit_keys SET revoked_at = coalesce(revoked_at, ?) WHERE key_id = ?`, nowMicros(), id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		found = n == 1
		return err
	})
	return found, err
}

const writerColumns = `writer_id, key_id, base_id, base_hash, anchor_id, anchor_hash, last_seq, last_hash, head_sig, started_at`

func scanWriter(r scanner) (auditchain.Writer, error) {
	var w auditchain.Writer
	var at int64
	err := r.Scan(&w.ID, &w.KeyID, &w.BaseID, &w.BaseHash, &w.AnchorID, &w.AnchorHash, &w.Seq, &w.Hash, &w.Sig, &at)
	w.Started = fromMicros(at)
	return w, err
}

// NextID implements [auditchain.Tx]: the write transaction holds the one
// writer lock, so the next id is free until it commits.
func (a auditTx) NextID(ctx context.Context) (int64, error) {
	var id int64
	err := a.tx.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) + 1 FROM audit_log`).Scan(&id)
	return id, err
}

// Keys implements [auditchain.Tx].
func (a auditTx) Keys(ctx context.Context) ([]sessions.AuditKey, error) {
	var out []sessions.AuditKey
	err := eachRow(func() (*sql.Rows, error) {
		return a.tx.QueryContext(ctx, `SELECT key_id, public_key, label, added_at, revoked_at FROM audit_keys ORDER BY key_id`)
	}, func(r scanner) (sessions.AuditKey, error) {
		var k sessions.AuditKey
		var at int64
		var revoked sql.NullInt64
		err := r.Scan(&k.ID, &k.PublicKey, &k.Label, &at, &revoked)
		k.Added, k.Revoked = fromMicros(at), revoked.Valid
		return k, err
	}, func(k sessions.AuditKey) bool { out = append(out, k); return true })
	return out, err
}

// Writers implements [auditchain.Tx].
func (a auditTx) Writers(ctx context.Context) ([]auditchain.Writer, error) {
	var out []auditchain.Writer
	err := eachRow(func() (*sql.Rows, error) {
		return a.tx.QueryContext(ctx, `SELECT `+writerColumns+` FROM audit_writers ORDER BY writer_id`)
	}, scanWriter, func(w auditchain.Writer) bool { out = append(out, w); return true })
	return out, err
}

// ScanWriters implements [auditchain.Tx].
func (a auditTx) ScanWriters(ctx context.Context, fn func(sessions.AuditRecord) bool) error {
	return eachRow(func() (*sql.Rows, error) {
		return a.tx.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit_log WHERE writer_id <> '' ORDER BY writer_id, seq`)
	}, scanAudit, fn)
}

// auditTx is the SQLite [auditchain.Tx].
type auditTx struct{ tx *sql.Tx }

// Head implements [auditchain.Tx]; a write transaction already holds
// SQLite's one writer lock.
func (a auditTx) Head(ctx context.Context, _ bool) (auditchain.Head, error) {
	var h auditchain.Head
	err := a.tx.QueryRowContext(ctx, `SELECT last_id, last_hash, key_id, head_mac FROM audit_head WHERE id = 1`).
		Scan(&h.ID, &h.Hash, &h.KeyID, &h.MAC)
	return h, err
}

// Now implements [auditchain.Tx]: this process's clock.
func (auditTx) Now(context.Context) (time.Time, error) { return fromMicros(nowMicros()), nil }

// Write implements [auditchain.Tx].
func (a auditTx) Write(ctx context.Context, rec sessions.AuditRecord, h auditchain.Head) error {
	if _, err := a.tx.ExecContext(ctx, `INSERT INTO audit_log (id, ts, type, origin, session_id, payload, prev_hash, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		rec.ID, micros(rec.TS), rec.Type, rec.Origin, rec.SessionID, string(rec.Payload), rec.PrevHash, rec.Hash); err != nil {
		return err
	}
	_, err := a.tx.ExecContext(ctx, `UPDATE audit_head SET last_id = ?, last_hash = ?, key_id = ?, head_mac = ? WHERE id = 1`,
		h.ID, h.Hash, h.KeyID, h.MAC)
	return err
}

// Scan implements [auditchain.Tx].
func (a auditTx) Scan(ctx context.Context, after int64, fn func(sessions.AuditRecord) bool) error {
	return scanChain(ctx, a.tx, after, fn)
}

// Record implements [auditchain.Tx].
func (a auditTx) Record(ctx context.Context, id int64) (sessions.AuditRecord, bool, error) {
	r, err := scanAudit(a.tx.QueryRowContext(ctx, `SELECT `+auditColumns+` FROM audit_log WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return sessions.AuditRecord{}, false, nil
	}
	return r, err == nil, err
}

// Unguarded implements [auditchain.Tx] (withoutAuditTriggers).
func (a auditTx) Unguarded(ctx context.Context, fn func() error) error {
	return withoutAuditTriggers(ctx, a.tx, fn)
}

// SetHashes implements [auditchain.Tx].
func (a auditTx) SetHashes(ctx context.Context, batch []sessions.AuditRecord) error {
	for _, r := range batch {
		if _, err := a.tx.ExecContext(ctx, `UPDATE audit_log SET prev_hash = ?, hash = ? WHERE id = ?`, r.PrevHash, r.Hash, r.ID); err != nil {
			return err
		}
	}
	return nil
}

// keyAudit keys an unkeyed audit log (see [sessions.Options] and
// [auditchain.Adopt]) in one write transaction. The append-only triggers
// are dropped for the rewrite and recreated from their stored SQL inside
// it, so no other connection ever sees the table without them.
func (s *Store) keyAudit(ctx context.Context) error {
	return s.writeTx(ctx, func(tx *sql.Tx) error { return s.keyAuditTx(ctx, tx) })
}

// keyAuditTx is keyAudit within tx (auditchain.Log.KeyTx).
func (s *Store) keyAuditTx(ctx context.Context, tx *sql.Tx) error {
	return s.auditLog.KeyTx(ctx, auditTx{tx})
}

// withoutAuditTriggers runs fn in tx with audit_log's append-only
// triggers dropped, and recreates them from their stored SQL after.
func withoutAuditTriggers(ctx context.Context, tx *sql.Tx, fn func() error) error {
	var names, triggers []string
	rows, err := tx.QueryContext(ctx, `SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'audit_log' ORDER BY name`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			rows.Close()
			return err
		}
		names, triggers = append(names, name), append(triggers, def)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, n := range names {
		if _, err := tx.ExecContext(ctx, `DROP TRIGGER "`+strings.ReplaceAll(n, `"`, `""`)+`"`); err != nil {
			return err
		}
	}
	if err := fn(); err != nil {
		return err
	}
	for _, def := range triggers {
		if _, err := tx.ExecContext(ctx, def); err != nil {
			return err
		}
	}
	return nil
}

const auditColumns = `id, ts, type, origin, session_id, payload, prev_hash, hash, writer_id, seq, sig`

func scanAudit(r scanner) (sessions.AuditRecord, error) {
	var (
		rec     sessions.AuditRecord
		ts      int64
		payload string
	)
	if err := r.Scan(&rec.ID, &ts, &rec.Type, &rec.Origin, &rec.SessionID, &payload, &rec.PrevHash, &rec.Hash, &rec.Writer, &rec.Seq, &rec.Sig); err != nil {
		return sessions.AuditRecord{}, err
	}
	rec.TS, rec.Payload = fromMicros(ts), []byte(payload)
	return rec, nil
}

// scanChain feeds the records after id after to fn in id order until fn
// returns false.
func scanChain(ctx context.Context, tx *sql.Tx, after int64, fn func(sessions.AuditRecord) bool) error {
	return eachRow(func() (*sql.Rows, error) {
		return tx.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit_log WHERE id > ? AND writer_id = '' ORDER BY id`, after)
	}, scanAudit, fn)
}

// TailAudit implements [sessions.Store].
func (s *Store) TailAudit(ctx context.Context, n int) ([]sessions.AuditRecord, error) {
	out := []sessions.AuditRecord{}
	if n <= 0 {
		return out, nil
	}
	err := eachRow(func() (*sql.Rows, error) {
		return s.r.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit_log ORDER BY id DESC LIMIT ?`, n)
	}, scanAudit, func(rec sessions.AuditRecord) bool { out = append(out, rec); return true })
	if err != nil {
		return nil, fmt.Errorf("tail audit: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}
