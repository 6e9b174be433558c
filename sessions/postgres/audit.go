package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
	"github.com/openprogram/openprogram/sessions/internal/rowerr"
)

const auditColumns = "id, ts, type, origin, session_id, payload, prev_hash, hash"

func scanAudit(row pgx.Row) (sessions.AuditRecord, error) {
	var r sessions.AuditRecord
	var payload string
	if err := row.Scan(&r.ID, &r.TS, &r.Type, &r.Origin, &r.SessionID, &payload, &r.PrevHash, &r.Hash); err != nil {
		return sessions.AuditRecord{}, err
	}
	r.Payload = json.RawMessage(payload)
	return r, nil
}

// auditLog, embedded in Store, gives it AppendAudit, VerifyAudit and
// CheckAuditAnchor: the chain's rules over auditTx.
type auditLog = auditchain.Log

// newAuditLog returns the audit log of s. An append's transaction locks
// the audit_head row, so appends from every process form one linear chain
// with gapless ids; the record and the new sealed head commit together.
// Verification reads one snapshot that also holds the chain head.
func newAuditLog(s *Store) auditLog {
	in := func(opts pgx.TxOptions) func(context.Context, func(auditchain.Tx) error) error {
		return func(ctx context.Context, fn func(auditchain.Tx) error) error {
			return s.tx(ctx, opts, func(tx pgx.Tx) error { return fn(auditTx{tx}) })
		}
	}
	return auditchain.NewLog(s.auditKey, in(readWrite), in(readOnly))
}

// auditTx is the PostgreSQL [auditchain.Tx].
type auditTx struct{ tx pgx.Tx }

// Head implements [auditchain.Tx]; lock takes the head's row lock, which
// orders appends from every process into one linear chain.
func (a auditTx) Head(ctx context.Context, lock bool) (auditchain.Head, error) {
	q := "SELECT last_id, last_hash, key_id, head_mac FROM audit_head"
	if lock {
		q += " FOR UPDATE"
	}
	var h auditchain.Head
	err := a.tx.QueryRow(ctx, q).Scan(&h.ID, &h.Hash, &h.KeyID, &h.MAC)
	return h, err
}

// Now implements [auditchain.Tx]: the database's clock.
func (a auditTx) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := a.tx.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
		return time.Time{}, err
	}
	return now.Truncate(time.Microsecond), nil
}

// Write implements [auditchain.Tx].
func (a auditTx) Write(ctx context.Context, rec sessions.AuditRecord, h auditchain.Head) error {
	b := &pgx.Batch{}
	b.Queue("INSERT INTO audit_records ("+auditColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
		rec.ID, rec.TS, rec.Type, rec.Origin, rec.SessionID, string(rec.Payload), rec.PrevHash, rec.Hash)
	b.Queue("UPDATE audit_head SET last_id = $1, last_hash = $2, key_id = $3, head_mac = $4", h.ID, h.Hash, h.KeyID, h.MAC)
	return a.tx.SendBatch(ctx, b).Close()
}

// Scan implements [auditchain.Tx].
func (a auditTx) Scan(ctx context.Context, after int64, fn func(sessions.AuditRecord) bool) error {
	return scanChain(ctx, a.tx, after, fn)
}

// Record implements [auditchain.Tx].
func (a auditTx) Record(ctx context.Context, id int64) (sessions.AuditRecord, bool, error) {
	r, err := scanAudit(a.tx.QueryRow(ctx, "SELECT "+auditColumns+" FROM audit_records WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return sessions.AuditRecord{}, false, nil
	}
	return r, err == nil, err
}

// Unguarded implements [auditchain.Tx]: the append-only trigger is
// disabled and enabled again inside the transaction (ALTER TABLE locks the
// table, so nobody else sees it off).
func (a auditTx) Unguarded(ctx context.Context, fn func() error) error {
	if _, err := a.tx.Exec(ctx, "ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_delete"); err != nil {
		return err
	}
	if err := fn(); err != nil {
		return err
	}
	_, err := a.tx.Exec(ctx, "ALTER TABLE audit_records ENABLE TRIGGER audit_records_no_update_delete")
	return err
}

// SetHashes implements [auditchain.Tx].
func (a auditTx) SetHashes(ctx context.Context, batch []sessions.AuditRecord) error {
	b := &pgx.Batch{}
	for _, r := range batch {
		b.Queue("UPDATE audit_records SET prev_hash = $1, hash = $2 WHERE id = $3", r.PrevHash, r.Hash, r.ID)
	}
	return a.tx.SendBatch(ctx, b).Close()
}

// keyAudit keys an unkeyed audit log (see [sessions.Options] and
// [auditchain.Adopt]) in one transaction holding the head's row lock.
func (s *Store) keyAudit(ctx context.Context) error {
	return s.tx(ctx, readWrite, func(tx pgx.Tx) error { return s.keyAuditTx(ctx, tx) })
}

// keyAuditTx is keyAudit within tx (auditchain.Log.KeyTx).
func (s *Store) keyAuditTx(ctx context.Context, tx pgx.Tx) error {
	return s.auditLog.KeyTx(ctx, auditTx{tx})
}

// scanChain streams the records after id after to fn in id order until fn
// returns false.
func scanChain(ctx context.Context, tx pgx.Tx, after int64, fn func(sessions.AuditRecord) bool) error {
	rows, err := tx.Query(ctx, "SELECT "+auditColumns+" FROM audit_records WHERE id > $1 ORDER BY id", after)
	if err != nil {
		return err
	}
	return rowerr.Each(rows, rows.Close, func(r rowerr.Scanner) (sessions.AuditRecord, error) { return scanAudit(r) }, fn)
}

// TailAudit returns the last n records, newest last.
func (s *Store) TailAudit(ctx context.Context, n int) ([]sessions.AuditRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	out, err := queryAll(ctx, s, scanAudit, "SELECT "+auditColumns+" FROM (SELECT "+auditColumns+
		" FROM audit_records ORDER BY id DESC LIMIT $1) tail ORDER BY id", n)
	if err != nil {
		return nil, fmt.Errorf("tail audit: %w", err)
	}
	return out, nil
}
