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

// AppendAudit appends r to the hash chain. The transaction locks the
// audit_head row, so appends from every process form one linear chain with
// gapless ids; the record and the new head commit together.
func (s *Store) AppendAudit(ctx context.Context, in sessions.NewAuditRecord) (sessions.AuditRecord, error) {
	if err := in.CheckText(); err != nil {
		return sessions.AuditRecord{}, err
	}
	if in.Type == "" {
		return sessions.AuditRecord{}, errors.New("append audit record: type is empty")
	}
	payload, err := auditchain.CanonicalPayload(in.Payload)
	if err != nil {
		return sessions.AuditRecord{}, fmt.Errorf("append audit record %q: %w", in.Type, err)
	}
	var out sessions.AuditRecord
	err = s.tx(ctx, readWrite, func(tx pgx.Tx) error {
		var (
			lastID   int64
			lastHash string
			now      time.Time
		)
		if err := tx.QueryRow(ctx, "SELECT last_id, last_hash, clock_timestamp() FROM audit_head FOR UPDATE").
			Scan(&lastID, &lastHash, &now); err != nil {
			return err
		}
		if lastHash == "" {
			lastHash = auditchain.Genesis
		}
		out = sessions.AuditRecord{
			ID: lastID + 1, TS: now.Truncate(time.Microsecond), Type: in.Type, Origin: in.Origin,
			SessionID: in.SessionID, Payload: payload, PrevHash: lastHash,
		}
		out.Hash = auditchain.RecordHash(out)
		b := &pgx.Batch{}
		b.Queue("INSERT INTO audit_records ("+auditColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
			out.ID, out.TS, out.Type, out.Origin, out.SessionID, string(out.Payload), out.PrevHash, out.Hash)
		b.Queue("UPDATE audit_head SET last_id = $1, last_hash = $2", out.ID, out.Hash)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return sessions.AuditRecord{}, fmt.Errorf("append audit record %q: %w", in.Type, err)
	}
	return out, nil
}

// TailAudit returns the last n records, newest last.
func (s *Store) TailAudit(ctx context.Context, n int) ([]sessions.AuditRecord, error) {
	if n <= 0 {
		return nil, nil
	}
	var out []sessions.AuditRecord
	err := s.run(ctx, func(q querier) error {
		rows, err := q.Query(ctx, "SELECT "+auditColumns+" FROM (SELECT "+auditColumns+
			" FROM audit_records ORDER BY id DESC LIMIT $1) tail ORDER BY id", n)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessions.AuditRecord, error) { return scanAudit(r) })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tail audit: %w", err)
	}
	return out, nil
}

// VerifyAudit walks the whole chain in id order, streaming, from one
// snapshot that also holds the chain head, and reports the first record
// that was edited, deleted or moved.
func (s *Store) VerifyAudit(ctx context.Context) (sessions.AuditReport, error) {
	var rep sessions.AuditReport
	err := s.tx(ctx, readOnly, func(tx pgx.Tx) error {
		var headID int64
		var headHash string
		if err := tx.QueryRow(ctx, "SELECT last_id, last_hash FROM audit_head").Scan(&headID, &headHash); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT "+auditColumns+" FROM audit_records ORDER BY id")
		if err != nil {
			return err
		}
		defer rows.Close()
		var v auditchain.Verifier
		for rows.Next() {
			r, err := scanAudit(rows)
			if err != nil {
				return err
			}
			if !v.Add(r) {
				break
			}
		}
		rows.Close()
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
