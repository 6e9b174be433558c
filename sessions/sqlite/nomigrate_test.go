package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

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
