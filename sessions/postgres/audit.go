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

const auditColumns = "id, ts, type, origin, session_id, payload, prev_hash, hash, writer_id, seq, sig"

func scanAudit(row pgx.Row) (sessions.AuditRecord, error) {
	var r sessions.AuditRecord
	var payload string
	if err := row.Scan(&r.ID, &r.TS, &r.Type, &r.Origin, &r.SessionID, &payload, &r.PrevHash, &r.Hash, &r.Writer, &r.Seq, &r.Sig); err != nil {
		return sessions.AuditRecord{}, err
	}
	r.Payload = json.RawMessage(payload)
	return r, nil
}

// auditLog, embedded in Store, gives it AppendAudit, VerifyAudit and
// CheckAuditAnchor: the chain's rules over auditTx.
type auditLog = auditchain.Log

// newAuditLog returns the audit log of s. With a signing key in opts,
// appends go to s's own writer chain: one statement per batch of appends,
// which touches no row another writer touches. Without, an append's
// transaction locks the audit_head row, so appends to the shared chain
// from every process form one linear chain; the record and the new sealed
// head commit together. Verification reads one snapshot.
func newAuditLog(s *Store, opts *sessions.Options) auditLog {
	in := func(opts pgx.TxOptions) func(context.Context, func(auditchain.Tx) error) error {
		return func(ctx context.Context, fn func(auditchain.Tx) error) error {
			return s.tx(ctx, opts, func(tx pgx.Tx) error { return fn(auditTx{tx}) })
		}
	}
	return auditchain.NewLog(s.auditKey, opts, writerStore{s}, in(readWrite), in(readOnly))
}

// writerStore is the PostgreSQL [auditchain.WriterStore]: every call is
// one statement.
type writerStore struct{ s *Store }

// StartWriter implements [auditchain.WriterStore].
func (ws writerStore) StartWriter(ctx context.Context, key sessions.AuditKey) (stored sessions.AuditKey, added bool, shared auditchain.Head, err error) {
	const q = `WITH ins AS (
		INSERT INTO audit_keys (key_id, public_key, label, added_at) VALUES ($1, $2, $3, clock_timestamp())
		ON CONFLICT (key_id) DO NOTHING RETURNING key_id, public_key, label, added_at, revoked_at)
	SELECT k.key_id, k.public_key, k.label, k.added_at, k.revoked_at IS NOT NULL, k.added, h.last_id, h.last_hash
	FROM (SELECT *, true AS added FROM ins
	      UNION ALL
	      SELECT key_id, public_key, label, added_at, revoked_at, false FROM audit_keys WHERE key_id = $1 AND NOT EXISTS (SELECT 1 FROM ins)) k,
	     audit_head h`
	for attempt := 0; ; attempt++ {
		err = ws.s.run(ctx, func(q2 querier) error {
			return q2.QueryRow(ctx, q, key.ID, key.PublicKey, key.Label).Scan(&stored.ID, &stored.PublicKey, &stored.Label,
				&stored.Added, &stored.Revoked, &added, &shared.ID, &shared.Hash)
		})
		// A writer of the same key that added it meanwhile: its row was
		// not in this statement's snapshot yet.
		if !errors.Is(err, pgx.ErrNoRows) || attempt > 0 {
			return stored, added, shared, err
		}
	}
}

// Flush implements [auditchain.WriterStore]: the records and the writer's
// head in one statement, written only while the key is not revoked.
func (ws writerStore) Flush(ctx context.Context, w auditchain.Writer, _ bool, recs []sessions.AuditRecord) (ids []int64, revoked bool, err error) {
	const q = `WITH k AS (SELECT 1 FROM audit_keys WHERE key_id = $1 AND revoked_at IS NULL),
	ins AS (
		INSERT INTO audit_records (ts, type, origin, session_id, payload, prev_hash, hash, writer_id, seq, sig)
		SELECT t.ts, t.type, t.origin, t.session_id, t.payload, t.prev_hash, t.hash, $12, t.seq, t.sig
		FROM unnest($2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[], $11::int[])
			AS t(ts, type, origin, session_id, payload, prev_hash, hash, seq, sig, ord)
		WHERE EXISTS (SELECT 1 FROM k)
		ORDER BY t.ord
		RETURNING id, seq),
	w AS (
		INSERT INTO audit_writers (writer_id, key_id, base_id, base_hash, anchor_id, anchor_hash, last_seq, last_hash, head_sig, started_at)
		SELECT $12, $1, $13, $14, $15, $16, $17, $18, $19, $20 WHERE EXISTS (SELECT 1 FROM k)
		ON CONFLICT (writer_id) DO UPDATE SET last_seq = EXCLUDED.last_seq, last_hash = EXCLUDED.last_hash, head_sig = EXCLUDED.head_sig
		RETURNING 1)
	SELECT id FROM ins ORDER BY seq`
	n := len(recs)
	var (
		ts                                                        = make([]time.Time, n)
		types, origins, sessionIDs, payloads, prevs, hashes, sigs = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		seqs                                                      = make([]int64, n)
		ord                                                       = make([]int32, n)
	)
	for i, r := range recs {
		ts[i], types[i], origins[i], sessionIDs[i], payloads[i] = r.TS, r.Type, r.Origin, r.SessionID, string(r.Payload)
		prevs[i], hashes[i], seqs[i], sigs[i], ord[i] = r.PrevHash, r.Hash, r.Seq, r.Sig, int32(i)
	}
	err = ws.s.run(ctx, func(q2 querier) error {
		ids = ids[:0]
		rows, err := q2.Query(ctx, q, w.KeyID, ts, types, origins, sessionIDs, payloads, prevs, hashes, seqs, sigs, ord,
			w.ID, w.BaseID, w.BaseHash, w.AnchorID, w.AnchorHash, w.Seq, w.Hash, w.Sig, w.Started)
		if err != nil {
			return err
		}
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	})
	if err != nil {
		return nil, false, err
	}
	if len(ids) == 0 && n > 0 {
		return nil, true, nil
	}
	return ids, false, nil
}

const writerColumns = "writer_id, key_id, base_id, base_hash, anchor_id, anchor_hash, last_seq, last_hash, head_sig, started_at"

func scanWriter(row pgx.Row) (auditchain.Writer, error) {
	var w auditchain.Writer
	err := row.Scan(&w.ID, &w.KeyID, &w.BaseID, &w.BaseHash, &w.AnchorID, &w.AnchorHash, &w.Seq, &w.Hash, &w.Sig, &w.Started)
	return w, err
}

// WriterHead implements [auditchain.WriterStore].
func (ws writerStore) WriterHead(ctx context.Context, id string) (w auditchain.Writer, found bool, err error) {
	err = ws.s.run(ctx, func(q querier) error {
		w, err = scanWriter(q.QueryRow(ctx, "SELECT "+writerColumns+" FROM audit_writers WHERE writer_id = $1", id))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return auditchain.Writer{}, false, nil
	}
	return w, err == nil, err
}

// Revoke implements [auditchain.WriterStore].
func (ws writerStore) Revoke(ctx context.Context, id string) (found bool, err error) {
	err = ws.s.run(ctx, func(q querier) error {
		tag, err := q.Exec(ctx, "UPDATE audit_keys SET revoked_at = COALESCE(revoked_at, clock_timestamp()) WHERE key_id = $1", id)
		found = tag.RowsAffected() == 1
		return err
	})
	return found, err
}

// NextID implements [auditchain.Tx]: the next value of the id sequence,
// moved past any id stored around it (a log of the first version, written
// before the sequence, re-keyed now).
func (a auditTx) NextID(ctx context.Context) (int64, error) {
	var id int64
	err := a.tx.QueryRow(ctx, `SELECT setval('audit_records_id_seq',
		greatest(nextval('audit_records_id_seq'), (SELECT COALESCE(max(id), 0) + 1 FROM audit_records)))`).Scan(&id)
	return id, err
}

// Keys implements [auditchain.Tx].
func (a auditTx) Keys(ctx context.Context) ([]sessions.AuditKey, error) {
	rows, err := a.tx.Query(ctx, "SELECT key_id, public_key, label, added_at, revoked_at IS NOT NULL FROM audit_keys ORDER BY key_id")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessions.AuditKey, error) {
		var k sessions.AuditKey
		err := r.Scan(&k.ID, &k.PublicKey, &k.Label, &k.Added, &k.Revoked)
		return k, err
	})
}

// Writers implements [auditchain.Tx].
func (a auditTx) Writers(ctx context.Context) ([]auditchain.Writer, error) {
	rows, err := a.tx.Query(ctx, "SELECT "+writerColumns+" FROM audit_writers ORDER BY writer_id")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (auditchain.Writer, error) { return scanWriter(r) })
}

// ScanWriters implements [auditchain.Tx].
func (a auditTx) ScanWriters(ctx context.Context, fn func(sessions.AuditRecord) bool) error {
	rows, err := a.tx.Query(ctx, "SELECT "+auditColumns+" FROM audit_records WHERE writer_id <> '' ORDER BY writer_id, seq")
	if err != nil {
		return err
	}
	return rowerr.Each(rows, rows.Close, func(r rowerr.Scanner) (sessions.AuditRecord, error) { return scanAudit(r) }, fn)
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
	b.Queue("INSERT INTO audit_records (id, ts, type, origin, session_id, payload, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
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
	rows, err := tx.Query(ctx, "SELECT "+auditColumns+" FROM audit_records WHERE id > $1 AND writer_id = '' ORDER BY id", after)
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
