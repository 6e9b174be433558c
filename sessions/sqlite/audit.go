package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

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
	rec := sessions.AuditRecord{Type: r.Type, Origin: r.Origin, SessionID: r.SessionID, Payload: payload}
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		var lastID int64
		if err := tx.QueryRowContext(ctx, `SELECT last_id, last_hash FROM audit_head WHERE id = 1`).Scan(&lastID, &rec.PrevHash); err != nil {
			return err
		}
		rec.ID = lastID + 1
		rec.TS = fromMicros(nowMicros())
		rec.Hash = auditchain.RecordHash(rec)
		if _, err := tx.ExecContext(ctx, `INSERT INTO audit_log (id, ts, type, origin, session_id, payload, prev_hash, hash)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			rec.ID, micros(rec.TS), rec.Type, rec.Origin, rec.SessionID, string(rec.Payload), rec.PrevHash, rec.Hash); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE audit_head SET last_id = ?, last_hash = ? WHERE id = 1`, rec.ID, rec.Hash)
		return err
	})
	if err != nil {
		return sessions.AuditRecord{}, fmt.Errorf("append audit record %q: %w", r.Type, err)
	}
	return rec, nil
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
// in one snapshot and compares its end with the stored chain head.
func (s *Store) VerifyAudit(ctx context.Context) (sessions.AuditReport, error) {
	var rep sessions.AuditReport
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		var (
			headID   int64
			headHash string
		)
		if err := tx.QueryRowContext(ctx, `SELECT last_id, last_hash FROM audit_head WHERE id = 1`).Scan(&headID, &headHash); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+auditColumns+` FROM audit_log ORDER BY id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		var v auditchain.Verifier
		for rows.Next() {
			rec, err := scanAudit(rows)
			if err != nil {
				return err
			}
			if !v.Add(rec) {
				break
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rep = v.Finish(headID, headHash)
		return nil
	})
	if err != nil {
		return sessions.AuditReport{}, fmt.Errorf("verify audit: %w", err)
	}
	return rep, nil
}
