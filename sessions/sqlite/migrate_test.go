package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/storetest"
)

// TestMigration3IndexesStoredMemory opens a store written at schema
// version 2 (FTS5 search) and checks that the upgrade writes the search
// postings of what was stored (storetest.CheckUpgradedMemory).
func TestMigration3IndexesStoredMemory(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DefaultFileName)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	exec(fmt.Sprintf(`PRAGMA application_id = %d`, ApplicationID))
	exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
	for _, m := range ms[:2] {
		exec(m.sql)
		exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, 0)`, m.version, m.name)
	}
	for i, d := range storetest.UpgradeSources {
		exec(`INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display, principal_id,
			authority_tier, interaction, source, revision, created_at) VALUES (?, ?, 'owner', 'o', 'Owner', 'p', 'owner', 'interactive', 'cli', ?, 0)`,
			d[0], d[1], i+1)
	}
	exec(`INSERT INTO memory_trusted (path, content, revision, source_id, updated_at) VALUES (?, ?, 4, 1, 0)`, storetest.UpgradeSources[0][0], storetest.UpgradeSources[0][1])
	exec(`UPDATE memory_state SET revision = 4, sources = 3, trusted = 1`)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	storetest.CheckUpgradedMemory(t, openAt(t, path), openAt(t, filepath.Join(t.TempDir(), DefaultFileName)))
}

// TestReindexMemory: storetest.CheckReindexedMemory, rows written with
// the store's own connection.
func TestReindexMemory(t *testing.T) {
	st := openAt(t, filepath.Join(t.TempDir(), DefaultFileName))
	storetest.CheckReindexedMemory(t, st, func(path, content string) {
		if _, err := st.w.Exec(`INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display,
			principal_id, authority_tier, interaction, source, revision, created_at)
			VALUES (?, ?, 'owner', 'o', 'Owner', 'p', 'owner', 'interactive', 'cli', 2, 0)`, path, content); err != nil {
			t.Fatal(err)
		}
	}, st.ReindexMemory)
}

// olderStore makes a store at path with one session "kept" titled title,
// then runs undo on the database, taking away what later versions added,
// so that path holds what an older version wrote.
func olderStore(t *testing.T, path, title string, undo ...string) {
	t.Helper()
	ctx := t.Context()
	st, err := OpenWith(ctx, path, &sessions.Options{AuditKey: storetest.Key})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "kept", Title: title}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range undo {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := OpenWith(ctx, path, &sessions.Options{AuditKey: storetest.Key, NoMigrate: true}); !errors.Is(err, sessions.ErrMigrationsPending) {
		t.Fatalf("NoMigrate open of the older store error = %v, want ErrMigrationsPending", err)
	}
}

// TestMigration4AddsTasks opens a store at schema version 3 (a store made
// now, the tables of version 4 on (tasks, session_allowances) and their
// versions taken away again, which is what version 3 wrote) and checks that the upgrade keeps what was stored and
// that tasks work (storetest.CheckUpgradedTasks).
func TestMigration4AddsTasks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DefaultFileName)
	olderStore(t, path, "from version 3", append(undoAuditWriters, `DROP TABLE tasks`, `DROP TABLE session_allowances`, `DELETE FROM schema_migrations WHERE version >= 4`)...)
	up := openAt(t, path)
	var version int
	if err := up.r.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || version != LatestSchemaVersion() {
		t.Fatalf("schema version after the upgrade = %d, %v; want %d", version, err, LatestSchemaVersion())
	}
	if got, err := up.GetSession(ctx, "kept"); err != nil || got.Title != "from version 3" {
		t.Errorf("session written at version 3 = %+v, %v; want it kept", got, err)
	}
	storetest.CheckUpgradedTasks(t, up)
}

// TestMigration5AddsSessionAllowances opens a store at schema version 4
// (a store made now, its session_allowances table and every version from
// 5 on taken away) and checks that the upgrade keeps the sessions and
// that standing approvals work and go with their session.
func TestMigration5AddsSessionAllowances(t *testing.T) {
	path := filepath.Join(t.TempDir(), DefaultFileName)
	olderStore(t, path, "from version 4", append(undoAuditWriters, `DROP TABLE session_allowances`, `DELETE FROM schema_migrations WHERE version >= 5`)...)
	up := openAt(t, path)
	storetest.CheckUpgradedAllowances(t, up, "kept", func() int {
		var n int
		if err := up.r.QueryRowContext(t.Context(), `SELECT count(*) FROM session_allowances`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// undoAuditWriters takes version 6 (writer chains) away from a store made
// now that holds no writer records.
var undoAuditWriters = []string{
	`DROP INDEX audit_log_writer_seq`,
	`ALTER TABLE audit_log DROP COLUMN sig`,
	`ALTER TABLE audit_log DROP COLUMN seq`,
	`ALTER TABLE audit_log DROP COLUMN writer_id`,
	`DROP TABLE audit_keys`,
	`DROP TABLE audit_writers`,
	`DELETE FROM schema_migrations WHERE version >= 6`,
}

// TestMigration6StartsWriterChains opens a keyed store at schema version
// 5 with records and checks the upgrade: in its transaction the shared
// chain gets its last record, audit.writers, and stays verifiable; a
// writer with a signing key of its own then appends to a chain of its own,
// and the whole log verifies.
func TestMigration6StartsWriterChains(t *testing.T) {
	path := filepath.Join(t.TempDir(), DefaultFileName)
	olderStore(t, path, "from version 5", undoAuditWriters...)
	up := openWith(t, path, &sessions.Options{AuditKey: storetest.Key, AuditSigner: storetest.SigningKey(0), AuditSignerLabel: "host-a"})
	storetest.CheckUpgradedAuditWriters(t, up, openWith(t, path, &sessions.Options{AuditSigner: storetest.SigningKey(1), AuditSignerLabel: "host-b"}))
}
