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

// readHead reads the chain head; lock takes its row lock, which orders
// appends from every process into one linear chain.
func readHead(ctx context.Context, tx pgx.Tx, lock bool) (auditchain.Head, error) {
	q := "SELECT last_id, last_hash, key_id, head_mac FROM audit_head"
	if lock {
		q += " FOR UPDATE"
	}
	var h auditchain.Head
	err := tx.QueryRow(ctx, q).Scan(&h.ID, &h.Hash, &h.KeyID, &h.MAC)
	return h, err
}

// AppendAudit appends r to the keyed chain. The transaction locks the
// audit_head row, so appends from every process form one linear chain with
// gapless ids; the record and the new sealed head commit together.
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
		head, err := readHead(ctx, tx, true)
		if err != nil {
			return err
		}
		if err := auditchain.CheckAppend(s.auditKey, head); err != nil {
			return err
		}
		out, err = s.appendAfter(ctx, tx, head, in, payload)
		return err
	})
	if err != nil {
		return sessions.AuditRecord{}, fmt.Errorf("append audit record %q: %w", in.Type, err)
	}
	return out, nil
}

// appendAfter writes the record after head (whose row the caller locked)
// and moves the sealed head.
func (s *Store) appendAfter(ctx context.Context, tx pgx.Tx, head auditchain.Head, in sessions.NewAuditRecord, payload json.RawMessage) (sessions.AuditRecord, error) {
	var now time.Time
	if err := tx.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now); err != nil {
		return sessions.AuditRecord{}, err
	}
	out := auditchain.Next(s.auditKey, head, now.Truncate(time.Microsecond), in, payload)
	h := auditchain.Seal(s.auditKey, out)
	b := &pgx.Batch{}
	b.Queue("INSERT INTO audit_records ("+auditColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
		out.ID, out.TS, out.Type, out.Origin, out.SessionID, string(out.Payload), out.PrevHash, out.Hash)
	b.Queue("UPDATE audit_head SET last_id = $1, last_hash = $2, key_id = $3, head_mac = $4", h.ID, h.Hash, h.KeyID, h.MAC)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return sessions.AuditRecord{}, err
	}
	return out, nil
}

// keyAudit keys an unkeyed audit log (see [sessions.Options] and
// [auditchain.Adopt]) in one transaction holding the head's row lock. The
// append-only trigger is disabled for the rewrite and enabled again inside
// the same transaction (ALTER TABLE locks the table, so nobody else sees it
// off).
func (s *Store) keyAudit(ctx context.Context) error {
	return s.tx(ctx, readWrite, func(tx pgx.Tx) error { return s.keyAuditTx(ctx, tx) })
}

// keyAuditTx is keyAudit within tx: the migration that creates a schema
// keys its log in the same transaction, so no process ever sees it unkeyed.
func (s *Store) keyAuditTx(ctx context.Context, tx pgx.Tx) error {
	head, err := readHead(ctx, tx, true)
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

// rekeyRows re-keys every row with the append-only trigger disabled.
func (s *Store) rekeyRows(ctx context.Context, tx pgx.Tx, scan auditchain.Scan) (auditchain.Head, error) {
	if _, err := tx.Exec(ctx, "ALTER TABLE audit_records DISABLE TRIGGER audit_records_no_update_delete"); err != nil {
		return auditchain.Head{}, err
	}
	head, err := auditchain.Rekey(s.auditKey, scan, func(batch []sessions.AuditRecord) error {
		b := &pgx.Batch{}
		for _, r := range batch {
			b.Queue("UPDATE audit_records SET prev_hash = $1, hash = $2 WHERE id = $3", r.PrevHash, r.Hash, r.ID)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return auditchain.Head{}, err
	}
	if _, err := tx.Exec(ctx, "ALTER TABLE audit_records ENABLE TRIGGER audit_records_no_update_delete"); err != nil {
		return auditchain.Head{}, err
	}
	return head, nil
}

// scanChain streams the records after id after to fn in id order until fn
// returns false.
func scanChain(ctx context.Context, tx pgx.Tx, after int64, fn func(sessions.AuditRecord) bool) error {
	rows, err := tx.Query(ctx, "SELECT "+auditColumns+" FROM audit_records WHERE id > $1 ORDER BY id", after)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanAudit(rows)
		if err != nil {
			return err
		}
		if !fn(r) {
			break
		}
	}
	rows.Close()
	return rows.Err()
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
// that was edited, deleted, inserted or moved, or a head moved back.
func (s *Store) VerifyAudit(ctx context.Context, anchor *sessions.AuditHead) (sessions.AuditReport, error) {
	if s.auditKey == nil {
		return sessions.AuditReport{}, fmt.Errorf("verify audit: %w", auditchain.CheckAppend(nil, auditchain.Head{}))
	}
	var rep sessions.AuditReport
	err := s.tx(ctx, readOnly, func(tx pgx.Tx) error {
		head, err := readHead(ctx, tx, false)
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
	err := s.tx(ctx, readOnly, func(tx pgx.Tx) error {
		var err error
		if head, err = readHead(ctx, tx, false); err != nil {
			return err
		}
		var rec *sessions.AuditRecord
		if anchor != nil {
			r, err := scanAudit(tx.QueryRow(ctx, "SELECT "+auditColumns+" FROM audit_records WHERE id = $1", anchor.ID))
			switch {
			case err == nil:
				rec = &r
			case !errors.Is(err, pgx.ErrNoRows):
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
