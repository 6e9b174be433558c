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
// one after another; verification reads one snapshot.
func newAuditLog(s *Store) auditLog {
	in := func(begin func(context.Context, func(*sql.Tx) error) error) func(context.Context, func(auditchain.Tx) error) error {
		return func(ctx context.Context, fn func(auditchain.Tx) error) error {
			return begin(ctx, func(tx *sql.Tx) error { return fn(auditTx{tx}) })
		}
	}
	return auditchain.NewLog(s.auditKey, in(s.writeTx), in(s.readTx))
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

const auditColumns = `id, ts, type, origin, session_id, payload, prev_hash, hash`

func scanAudit(r scanner) (sessions.AuditRecord, error) {
	var (
		rec     sessions.AuditRecord
		ts      int64
		payload string
	)
	if err := r.Scan(&rec.ID, &ts, &rec.Type, &rec.Origin, &rec.SessionID, &payload, &rec.PrevHash, &rec.Hash); err != nil {
		return sessions.AuditRecord{}, err
	}
	rec.TS, rec.Payload = fromMicros(ts), []byte(payload)
	return rec, nil
}

// scanChain feeds the records after id after to fn in id order until fn
// returns false.
func scanChain(ctx context.Context, tx *sql.Tx, after int64, fn func(sessions.AuditRecord) bool) error {
	return eachRow(func() (*sql.Rows, error) {
		return tx.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit_log WHERE id > ? ORDER BY id`, after)
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
