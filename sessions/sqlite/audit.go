package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
)

// AppendAudit implements [sessions.Store]. The write transaction reads the
// chain head, so concurrent appends (any process) chain one after another.
func (s *Store) AppendAudit(ctx context.Context, r sessions.NewAuditRecord) (sessions.AuditRecord, error) {
	if err := r.CheckText(); err != nil {
		return sessions.AuditRecord{}, err
	}
	if r.Type == "" {
		return sessions.AuditRecord{}, errors.New("append audit record: empty type")
	}
	payload, err := auditchain.CanonicalPayload(r.Payload)
	if err != nil {
		return sessions.AuditRecord{}, fmt.Errorf("append audit record %q: %w", r.Type, err)
	}
	var rec sessions.AuditRecord
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		head, err := readHead(ctx, tx)
		if err != nil {
			return err
		}
		if err := auditchain.CheckAppend(s.auditKey, head); err != nil {
			return err
		}
		rec, err = s.appendAfter(ctx, tx, head, r, payload)
		return err
	})
	if err != nil {
		return sessions.AuditRecord{}, fmt.Errorf("append audit record %q: %w", r.Type, err)
	}
	return rec, nil
}

// appendAfter writes the record after head and moves the sealed head.
func (s *Store) appendAfter(ctx context.Context, tx *sql.Tx, head auditchain.Head, r sessions.NewAuditRecord, payload json.RawMessage) (sessions.AuditRecord, error) {
	rec := auditchain.Next(s.auditKey, head, fromMicros(nowMicros()), r, payload)
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_log (id, ts, type, origin, session_id, payload, prev_hash, hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		rec.ID, micros(rec.TS), rec.Type, rec.Origin, rec.SessionID, string(rec.Payload), rec.PrevHash, rec.Hash); err != nil {
		return sessions.AuditRecord{}, err
	}
	h := auditchain.Seal(s.auditKey, rec)
	if _, err := tx.ExecContext(ctx, `UPDATE audit_head SET last_id = ?, last_hash = ?, key_id = ?, head_mac = ? WHERE id = 1`,
		h.ID, h.Hash, h.KeyID, h.MAC); err != nil {
		return sessions.AuditRecord{}, err
	}
	return rec, nil
}

func readHead(ctx context.Context, tx *sql.Tx) (auditchain.Head, error) {
	var h auditchain.Head
	err := tx.QueryRowContext(ctx, `SELECT last_id, last_hash, key_id, head_mac FROM audit_head WHERE id = 1`).
		Scan(&h.ID, &h.Hash, &h.KeyID, &h.MAC)
	return h, err
}

// keyAudit keys an unkeyed audit log (see [sessions.Options] and
// [auditchain.Adopt]) in one write transaction. The append-only triggers
// are dropped for the rewrite and recreated from their stored SQL inside
// it, so no other connection ever sees the table without them.
func (s *Store) keyAudit(ctx context.Context) error {
	return s.writeTx(ctx, func(tx *sql.Tx) error { return s.keyAuditTx(ctx, tx) })
}

// keyAuditTx is keyAudit within tx: the migration that creates a store
// keys its log in the same transaction, so no process ever sees it unkeyed.
func (s *Store) keyAuditTx(ctx context.Context, tx *sql.Tx) error {
	head, err := readHead(ctx, tx)
	if err != nil {
		return fmt.Errorf("key the audit log: %w", err)
	}
	scan := func(after int64, fn func(sessions.AuditRecord) bool) error { return scanChain(ctx, tx, after, fn) }
	err = auditchain.Adopt(head, scan,
		func() (auditchain.Head, error) { return s.rekeyRows(ctx, tx, scan) },
		func(h auditchain.Head, in sessions.NewAuditRecord, payload json.RawMessage) error {
			_, err := s.appendAfter(ctx, tx, h, in, payload)
			return err
		})
	if err != nil {
		return fmt.Errorf("key the audit log: %w", err)
	}
	return nil
}

// rekeyRows re-keys every row with the triggers dropped and recreated.
func (s *Store) rekeyRows(ctx context.Context, tx *sql.Tx, scan auditchain.Scan) (auditchain.Head, error) {
	var head auditchain.Head
	err := withoutAuditTriggers(ctx, tx, func() error {
		var err error
		head, err = auditchain.Rekey(s.auditKey, scan, func(batch []sessions.AuditRecord) error {
			for _, r := range batch {
				if _, err := tx.ExecContext(ctx, `UPDATE audit_log SET prev_hash = ?, hash = ? WHERE id = ?`, r.PrevHash, r.Hash, r.ID); err != nil {
					return err
				}
			}
			return nil
		})
		return err
	})
	return head, err
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
	rows, err := tx.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit_log WHERE id > ? ORDER BY id`, after)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		rec, err := scanAudit(rows)
		if err != nil {
			return err
		}
		if !fn(rec) {
			break
		}
	}
	return rows.Err()
}

// TailAudit implements [sessions.Store].
func (s *Store) TailAudit(ctx context.Context, n int) ([]sessions.AuditRecord, error) {
	out := []sessions.AuditRecord{}
	if n <= 0 {
		return out, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit_log ORDER BY id DESC LIMIT ?`, n)
	if err != nil {
		return nil, fmt.Errorf("tail audit: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		rec, err := scanAudit(rows)
		if err != nil {
			return nil, fmt.Errorf("tail audit: %w", err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tail audit: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// VerifyAudit implements [sessions.Store]: it walks the chain in id order
// in one snapshot and compares its end with the sealed chain head.
func (s *Store) VerifyAudit(ctx context.Context, anchor *sessions.AuditHead) (sessions.AuditReport, error) {
	if s.auditKey == nil {
		return sessions.AuditReport{}, fmt.Errorf("verify audit: %w", auditchain.CheckAppend(nil, auditchain.Head{}))
	}
	var rep sessions.AuditReport
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		head, err := readHead(ctx, tx)
		if err != nil {
			return err
		}
		v := auditchain.NewVerifier(s.auditKey, head, anchor)
		if err := scanChain(ctx, tx, 0, v.Add); err != nil {
			return err
		}
		rep = v.Finish()
		return nil
	})
	if err != nil {
		return sessions.AuditReport{}, fmt.Errorf("verify audit: %w", err)
	}
	return rep, nil
}

// CheckAuditAnchor implements [sessions.Store].
func (s *Store) CheckAuditAnchor(ctx context.Context, anchor *sessions.AuditHead) (sessions.AuditHead, error) {
	var head auditchain.Head
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var err error
		if head, err = readHead(ctx, tx); err != nil {
			return err
		}
		var rec *sessions.AuditRecord
		if anchor != nil {
			r, err := scanAudit(tx.QueryRowContext(ctx, `SELECT `+auditColumns+` FROM audit_log WHERE id = ?`, anchor.ID))
			switch {
			case err == nil:
				rec = &r
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		return auditchain.CheckAnchor(s.auditKey, head, anchor, rec)
	})
	if err != nil {
		return sessions.AuditHead{}, fmt.Errorf("check the audit anchor: %w", err)
	}
	return sessions.AuditHead{ID: head.ID, MAC: head.Hash}, nil
}
