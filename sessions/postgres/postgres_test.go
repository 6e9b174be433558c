package postgres_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
	"github.com/openprogram/openprogram/sessions/postgres"
	"github.com/openprogram/openprogram/sessions/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashHelperEnv) != "" {
		os.Exit(crashHelper())
	}
	code := m.Run()
	dropBenchSchemas()
	stopContainer()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines leaked: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// openStore opens a store on db, keyed with storetest.Key, and closes it
// when the test ends.
func openStore(tb testing.TB, db *testDB) *postgres.Store {
	tb.Helper()
	return openStoreWith(tb, db, &sessions.Options{AuditKey: storetest.Key})
}

func openStoreWith(tb testing.TB, db *testDB, opts *sessions.Options) *postgres.Store {
	tb.Helper()
	st, err := postgres.OpenWith(context.Background(), db.URL, opts)
	if err != nil {
		tb.Fatalf("postgres.Open(%s) error: %v", db.Schema, err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// dbOf maps the stores the suite opens to their schema, so the second
// handle and the tamperer find the schema of the first.
var dbOf sync.Map // sessions.Store -> *testDB

func schemaOf(t *testing.T, s sessions.Store) *testDB {
	t.Helper()
	db, ok := dbOf.Load(s)
	if !ok {
		t.Fatalf("store %p was not opened by TestConformance", s)
	}
	return db.(*testDB)
}

func TestConformance(t *testing.T) {
	baseURL(t) // fail (CI) or skip once, not in every subtest
	storetest.Run(t,
		func(t *testing.T, opts *sessions.Options) sessions.Store {
			db := newTestDB(t)
			st := openStoreWith(t, db, opts)
			dbOf.Store(st, db)
			t.Cleanup(func() { dbOf.Delete(st) })
			return st
		},
		storetest.WithSecondHandle(func(t *testing.T, s sessions.Store, opts *sessions.Options) sessions.Store {
			db := schemaOf(t, s)
			st := openStoreWith(t, db, opts)
			dbOf.Store(st, db)
			t.Cleanup(func() { dbOf.Delete(st) })
			return st
		}),
		storetest.WithTamperer(func(t *testing.T, s sessions.Store) storetest.Tamperer {
			return tamperer{db: schemaOf(t, s).conn(t)}
		}))
}

// tamperer rewrites the audit tables behind the store's back. The table's
// append-only triggers stand in the way of UPDATE and DELETE, so each
// change disables them for its own transaction, as an attacker owning the
// table could.
type tamperer struct{ db *pgx.Conn }

func (tp tamperer) tamper(ctx context.Context, sql string, args ...any) error {
	return pgx.BeginFunc(ctx, tp.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "ALTER TABLE audit_records DISABLE TRIGGER USER"); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("tamper %q changed no row", sql)
		}
		_, err = tx.Exec(ctx, "ALTER TABLE audit_records ENABLE TRIGGER USER")
		return err
	})
}

func (tp tamperer) EditAuditPayload(ctx context.Context, id int64, payload string) error {
	return tp.tamper(ctx, "UPDATE audit_records SET payload = $2 WHERE id = $1", id, payload)
}

func (tp tamperer) DeleteAudit(ctx context.Context, id int64) error {
	return tp.tamper(ctx, "DELETE FROM audit_records WHERE id = $1", id)
}

func (tp tamperer) SwapAudit(ctx context.Context, a, b int64) error {
	return tp.tamper(ctx, `UPDATE audit_records r SET ts = o.ts, type = o.type, origin = o.origin,
		session_id = o.session_id, payload = o.payload, prev_hash = o.prev_hash, hash = o.hash, sig = o.sig
		FROM audit_records o WHERE (r.id = $1 AND o.id = $2) OR (r.id = $2 AND o.id = $1)`, a, b)
}

func (tp tamperer) InsertAudit(ctx context.Context, r sessions.AuditRecord) error {
	return tp.tamper(ctx, `INSERT INTO audit_records (id, ts, type, origin, session_id, payload, prev_hash, hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, r.ID, r.TS, r.Type, r.Origin, r.SessionID, string(r.Payload), r.PrevHash, r.Hash)
}

func (tp tamperer) RewriteAudit(ctx context.Context, r sessions.AuditRecord) error {
	return tp.tamper(ctx, `UPDATE audit_records SET ts = $2, type = $3, origin = $4, session_id = $5, payload = $6,
		prev_hash = $7, hash = $8 WHERE id = $1`, r.ID, r.TS, r.Type, r.Origin, r.SessionID, string(r.Payload), r.PrevHash, r.Hash)
}

func (tp tamperer) AuditHead(ctx context.Context) (storetest.HeadRow, error) {
	var h storetest.HeadRow
	err := tp.db.QueryRow(ctx, "SELECT last_id, last_hash, key_id, head_mac FROM audit_head").Scan(&h.LastID, &h.LastHash, &h.KeyID, &h.MAC)
	return h, err
}

func (tp tamperer) SetAuditHead(ctx context.Context, h storetest.HeadRow) error {
	return tp.tamper(ctx, "UPDATE audit_head SET last_id = $1, last_hash = $2, key_id = $3, head_mac = $4", h.LastID, h.LastHash, h.KeyID, h.MAC)
}

func (tp tamperer) AuditWriters(ctx context.Context) ([]auditchain.Writer, error) {
	var out []auditchain.Writer
	err := pgx.BeginFunc(ctx, tp.db, func(tx pgx.Tx) error {
		var err error
		out, err = postgres.AuditWritersTx(ctx, tx)
		return err
	})
	return out, err
}

func (tp tamperer) SetAuditWriter(ctx context.Context, w auditchain.Writer) error {
	return tp.tamper(ctx, `UPDATE audit_writers SET key_id = $2, base_id = $3, base_hash = $4, anchor_id = $5, anchor_hash = $6,
		last_seq = $7, last_hash = $8, head_sig = $9 WHERE writer_id = $1`, w.ID, w.KeyID, w.BaseID, w.BaseHash, w.AnchorID, w.AnchorHash, w.Seq, w.Hash, w.Sig)
}

func (tp tamperer) DeleteAuditWriter(ctx context.Context, id string) error {
	return tp.tamper(ctx, "DELETE FROM audit_writers WHERE writer_id = $1", id)
}

func (tp tamperer) SetAuditKeyRow(ctx context.Context, k sessions.AuditKey) error {
	return tp.tamper(ctx, "UPDATE audit_keys SET public_key = $2, revoked_at = CASE WHEN $3 THEN now() END WHERE key_id = $1", k.ID, k.PublicKey, k.Revoked)
}

func (tp tamperer) DeleteAuditKeyRow(ctx context.Context, id string) error {
	return tp.tamper(ctx, "DELETE FROM audit_keys WHERE key_id = $1", id)
}
