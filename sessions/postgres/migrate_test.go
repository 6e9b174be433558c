package postgres_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"
	"github.com/openprogram/openprogram/sessions/storetest"
)

// TestMigration3IndexesStoredMemory opens a schema written at version 2
// (tsvector search) and checks that the upgrade writes the search
// postings of what was stored (storetest.CheckUpgradedMemory).
func TestMigration3IndexesStoredMemory(t *testing.T) {
	old := newTestDB(t)
	old.exec(t, `CREATE TABLE openprogram_schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`)
	for i, name := range []string{"0001_init", "0002_audit_key"} {
		body, err := os.ReadFile("migrations/" + name + ".sql")
		if err != nil {
			t.Fatal(err)
		}
		old.exec(t, string(body))
		old.exec(t, `INSERT INTO openprogram_schema_migrations (version, name) VALUES ($1, $2)`, i+1, name)
	}
	for i, d := range storetest.UpgradeSources {
		old.exec(t, `INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display, principal_id,
			authority_tier, interaction, source, revision, created_at)
			VALUES ($1, $2, 'owner', 'o', 'Owner', 'p', 'owner', 'interactive', 'cli', $3, now())`, d[0], d[1], i+1)
	}
	old.exec(t, `INSERT INTO memory_trusted (path, content, revision, source_id, updated_at) VALUES ($1, $2, 4, 1, now())`,
		storetest.UpgradeSources[0][0], storetest.UpgradeSources[0][1])
	old.exec(t, `UPDATE memory_state SET revision = 4, sources = 3, trusted_pages = 1`)

	storetest.CheckUpgradedMemory(t, openStore(t, old), openStore(t, newTestDB(t)))
}

// TestReindexMemory: storetest.CheckReindexedMemory, rows written on a
// connection of their own.
func TestReindexMemory(t *testing.T) {
	db := newTestDB(t)
	st := openStore(t, db)
	storetest.CheckReindexedMemory(t, st, func(path, content string) {
		db.exec(t, `INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display, principal_id,
			authority_tier, interaction, source, revision, created_at)
			VALUES ($1, $2, 'owner', 'o', 'Owner', 'p', 'owner', 'interactive', 'cli', 2, now())`, path, content)
	}, st.ReindexMemory)
}

// olderSchema makes a store in db with one session "kept" titled title,
// then runs undo, taking away what later versions added, so that db holds
// what an older version wrote. It returns the latest schema version, read
// before the undo.
func olderSchema(t *testing.T, db *testDB, title string, undo ...string) (latest int) {
	t.Helper()
	ctx := t.Context()
	st, err := postgres.OpenWith(ctx, db.URL, &sessions.Options{AuditKey: storetest.Key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "kept", Title: title}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if err := db.conn(t).QueryRow(ctx, `SELECT max(version) FROM openprogram_schema_migrations`).Scan(&latest); err != nil {
		t.Fatal(err)
	}
	for _, q := range undo {
		db.exec(t, q)
	}
	if _, err := postgres.OpenWith(ctx, db.URL, &sessions.Options{AuditKey: storetest.Key, NoMigrate: true}); !errors.Is(err, sessions.ErrMigrationsPending) {
		t.Fatalf("NoMigrate open of the older schema error = %v, want ErrMigrationsPending", err)
	}
	return latest
}

// TestMigration4AddsTasks opens a schema at version 3 (a store made now,
// its tasks table and version 4 taken away again, which is what version 3
// wrote) and checks that the upgrade keeps what was stored and that tasks
// work (storetest.CheckUpgradedTasks).
func TestMigration4AddsTasks(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	latest := olderSchema(t, db, "from version 3", append(undoAuditWriters, `DROP TABLE tasks`, `DROP TABLE session_allowances`, `DELETE FROM openprogram_schema_migrations WHERE version >= 4`)...)
	up := openStore(t, db)
	var version int
	if err := db.conn(t).QueryRow(ctx, `SELECT max(version) FROM openprogram_schema_migrations`).Scan(&version); err != nil || version != latest {
		t.Fatalf("schema version after the upgrade = %d, %v; want %d", version, err, latest)
	}
	if got, err := up.GetSession(ctx, "kept"); err != nil || got.Title != "from version 3" {
		t.Errorf("session written at version 3 = %+v, %v; want it kept", got, err)
	}
	storetest.CheckUpgradedTasks(t, up)
}

// TestMigration5AddsSessionAllowances opens a schema at version 4 (its
// session_allowances table and every version from 5 on taken away) and
// checks that the upgrade keeps the sessions and that standing approvals
// work and go with their session.
func TestMigration5AddsSessionAllowances(t *testing.T) {
	db := newTestDB(t)
	olderSchema(t, db, "from version 4", append(undoAuditWriters, `DROP TABLE session_allowances`, `DELETE FROM openprogram_schema_migrations WHERE version >= 5`)...)
	up := openStore(t, db)
	storetest.CheckUpgradedAllowances(t, up, "kept", func() int {
		var n int
		if err := db.conn(t).QueryRow(t.Context(), `SELECT count(*) FROM session_allowances`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// undoAuditWriters takes version 6 (writer chains) away from a schema made
// now that holds no writer records.
var undoAuditWriters = []string{
	`ALTER TABLE audit_records ALTER COLUMN id DROP DEFAULT`,
	`DROP SEQUENCE audit_records_id_seq`,
	`DROP INDEX audit_records_writer_seq`,
	`ALTER TABLE audit_records DROP COLUMN sig, DROP COLUMN seq, DROP COLUMN writer_id`,
	`DROP TABLE audit_keys`,
	`DROP TABLE audit_writers`,
	`DELETE FROM openprogram_schema_migrations WHERE version >= 6`,
}

// TestMigration6StartsWriterChains opens a keyed schema at version 5 with
// records and checks the upgrade: in its transaction the shared chain gets
// its last record, audit.writers, and stays verifiable; writers with
// signing keys of their own (one without the audit key) then append, and
// the whole log verifies.
func TestMigration6StartsWriterChains(t *testing.T) {
	db := newTestDB(t)
	olderSchema(t, db, "from version 5", undoAuditWriters...)
	up := openStoreWith(t, db, &sessions.Options{AuditKey: storetest.Key, AuditSigner: storetest.SigningKey(0), AuditSignerLabel: "host-a"})
	storetest.CheckUpgradedAuditWriters(t, up, openStoreWith(t, db, &sessions.Options{AuditSigner: storetest.SigningKey(1), AuditSignerLabel: "host-b"}))
}
