package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// With NoMigrate a store is only looked at: a missing or empty file is
// ErrNoStore and stays missing or empty, an older schema is
// ErrMigrationsPending and keeps its version, and a current one opens.
func TestOpenNoMigrateChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	look := &sessions.Options{NoMigrate: true}

	missing := filepath.Join(dir, "missing.db")
	if st, err := OpenWith(ctx, missing, look); !errors.Is(err, sessions.ErrNoStore) {
		closeIf(st)
		t.Errorf("NoMigrate open of a missing file = %v, want ErrNoStore", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("NoMigrate open of a missing file left %d files in the directory", len(entries))
	}

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := OpenWith(ctx, empty, look); !errors.Is(err, sessions.ErrNoStore) {
		closeIf(st)
		t.Errorf("NoMigrate open of an empty file = %v, want ErrNoStore", err)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Errorf("the empty file after a NoMigrate open: %v, %v; want it still empty", fi, err)
	}

	path := filepath.Join(dir, DefaultFileName)
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = OpenWith(ctx, path, look)
	if err != nil {
		t.Fatalf("NoMigrate open of a current store: %v", err)
	}
	if got, err := st.ListSessions(ctx, 10); err != nil || len(got) != 1 {
		t.Errorf("ListSessions through a NoMigrate open = %v, %v; want the one session", got, err)
	}
	st.Close()

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	latest := LatestSchemaVersion()
	if _, err := db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = ?`, latest); err != nil {
		t.Fatal(err)
	}
	if st, err := OpenWith(ctx, path, look); !errors.Is(err, sessions.ErrMigrationsPending) {
		closeIf(st)
		t.Errorf("NoMigrate open of a store one version behind = %v, want ErrMigrationsPending", err)
	}
	var version int
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&version); err != nil || version != latest-1 {
		t.Errorf("schema version after the NoMigrate open = %d, %v; want %d, unchanged", version, err, latest-1)
	}
}

func closeIf(st *Store) {
	if st != nil {
		st.Close()
	}
}

// A NoMigrate open only reads the schema version, so another connection
// holding a write transaction neither blocks it nor fails it; and a store
// one version behind is still refused with ErrMigrationsPending while that
// writer holds its lock.
func TestOpenNoMigrateBesideAWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DefaultFileName)
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	writer, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	hold := func(stmt string, args ...any) {
		t.Helper()
		if _, err := writer.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
		if stmt != "" {
			if _, err := writer.ExecContext(ctx, stmt, args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	look := &sessions.Options{NoMigrate: true}
	// Well under BusyTimeout: an open that waits for the writer's lock
	// fails here instead of after it.
	openBeside := func() (*Store, time.Duration, error) {
		wait, cancel := context.WithTimeout(ctx, BusyTimeout/5)
		defer cancel()
		start := time.Now()
		st, err := OpenWith(wait, path, look)
		return st, time.Since(start), err
	}

	hold("")
	st, took, err := openBeside()
	if err != nil {
		t.Fatalf("NoMigrate open while another connection holds a write transaction: %v (after %v), want it open", err, took)
	}
	if got, err := st.ListSessions(ctx, 10); err != nil || len(got) != 0 {
		t.Errorf("ListSessions through the NoMigrate open = %v, %v; want no sessions", got, err)
	}
	st.Close()
	if _, err := writer.ExecContext(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}

	latest := LatestSchemaVersion()
	if _, err := db.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = ?`, latest); err != nil {
		t.Fatal(err)
	}
	hold(`INSERT INTO sessions (id, created_at, updated_at) VALUES ('w', 0, 0)`)
	defer writer.ExecContext(ctx, `ROLLBACK`)
	if st, took, err := openBeside(); !errors.Is(err, sessions.ErrMigrationsPending) {
		closeIf(st)
		t.Errorf("NoMigrate open of a store one version behind, beside a writer = %v (after %v), want ErrMigrationsPending", err, took)
	}
}
