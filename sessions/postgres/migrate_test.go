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

// TestMigration4AddsTasks opens a schema at version 3 (a store made now,
// its tasks table and version 4 taken away again, which is what version 3
// wrote) and checks that the upgrade keeps what was stored and that tasks
// work (storetest.CheckUpgradedTasks).
func TestMigration4AddsTasks(t *testing.T) {
	ctx := context.Background()
	db := newTestDB(t)
	st, err := postgres.OpenWith(ctx, db.URL, &sessions.Options{AuditKey: storetest.Key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "kept", Title: "from version 3"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	db.exec(t, `DROP TABLE tasks`)
	db.exec(t, `DELETE FROM openprogram_schema_migrations WHERE version = 4`)
	if _, err := postgres.OpenWith(ctx, db.URL, &sessions.Options{AuditKey: storetest.Key, NoMigrate: true}); !errors.Is(err, sessions.ErrMigrationsPending) {
		t.Fatalf("NoMigrate open of the version 3 schema error = %v, want ErrMigrationsPending", err)
	}

	up := openStore(t, db)
	var version int
	if err := db.conn(t).QueryRow(ctx, `SELECT max(version) FROM openprogram_schema_migrations`).Scan(&version); err != nil || version != 4 {
		t.Fatalf("schema version after the upgrade = %d, %v; want 4", version, err)
	}
	if got, err := up.GetSession(ctx, "kept"); err != nil || got.Title != "from version 3" {
		t.Errorf("session written at version 3 = %+v, %v; want it kept", got, err)
	}
	storetest.CheckUpgradedTasks(t, up)
}
