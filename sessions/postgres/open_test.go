package postgres_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"

	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
)

// Processes starting together on an empty schema migrate it once.
func TestOpenConcurrentMigratesOnce(t *testing.T) {
	db := newTestDB(t)
	const n = 6
	var wg sync.WaitGroup
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(t.Context(), db.URL) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Open %d error: %v", i, err)
			continue
		}
		stores[i].Close()
	}
	var versions []int
	rows, err := db.conn(t).Query(t.Context(), "SELECT version FROM openprogram_schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("list the migration files: %d files, %v", len(files), err)
	}
	var want []int
	for i := range files {
		want = append(want, i+1)
	}
	if diff := cmp.Diff(want, versions); diff != "" {
		t.Errorf("applied migrations after %d concurrent Opens (-want +got):\n%s", n, diff)
	}
	// Reopening an up-to-date schema changes nothing and works.
	st := openStore(t, db)
	if _, err := st.CreateSession(t.Context(), sessions.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	db := newTestDB(t)
	openStore(t, db).Close()
	db.exec(t, "INSERT INTO openprogram_schema_migrations (version, name) VALUES (999, '0999_from_the_future')")
	st, err := postgres.Open(t.Context(), db.URL)
	if err == nil {
		st.Close()
		t.Fatal("Open(schema at version 999) succeeded, want ErrSchemaTooNew")
	}
	if !errors.Is(err, sessions.ErrSchemaTooNew) || !strings.Contains(err.Error(), "999") || !strings.Contains(err.Error(), "upgrade openprogram") {
		t.Errorf("Open(schema at version 999) error = %v, want ErrSchemaTooNew naming the version and the fix", err)
	}
}

func TestOpenRefusesForeignSchema(t *testing.T) {
	db := newTestDB(t)
	db.exec(t, "CREATE TABLE sessions (user_id int PRIMARY KEY, token text)")
	st, err := postgres.Open(t.Context(), db.URL)
	if err == nil {
		st.Close()
		t.Fatal("Open(schema with someone else's sessions table) succeeded, want ErrNotDatabase")
	}
	if !errors.Is(err, sessions.ErrNotDatabase) {
		t.Errorf("Open(foreign schema) error = %v, want ErrNotDatabase", err)
	}
	// Nothing was created next to the foreign table.
	var n int
	if err := db.conn(t).QueryRow(t.Context(), "SELECT count(*) FROM pg_tables WHERE schemaname = $1", db.Schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("schema holds %d tables after the refused Open, want only the foreign one", n)
	}
}

func TestOpenMissingSchema(t *testing.T) {
	db := newTestDB(t)
	u := pgtest.WithParams(db.URL, map[string]string{"search_path": db.Schema + "_missing"})
	st, err := postgres.Open(t.Context(), u)
	if err == nil {
		st.Close()
		t.Fatal("Open(search_path naming no schema) succeeded, want an error")
	}
	if !strings.Contains(err.Error(), "search_path") {
		t.Errorf("Open(search_path naming no schema) error = %v, want it to point at search_path", err)
	}
}

func TestOpenErrorHidesPassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10e9)
	defer cancel()
	// Nothing listens on port 1.
	for _, u := range []string{
		"postgres://op:hunter2secret@127.0.0.1:1/db?sslmode=disable&connect_timeout=2",
		"postgres://op@127.0.0.1:1/db?sslmode=disable&connect_timeout=2&password=hunter2secret",
	} {
		st, err := postgres.Open(ctx, u)
		if err == nil {
			st.Close()
			t.Fatal("Open(unreachable server) succeeded")
		}
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("Open error %q reveals the password", err)
		}
	}
	if _, err := postgres.Open(ctx, "postgres://op:hunter2secret@[::1"); err == nil || strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("Open(malformed url) error = %v, want an error without the password", err)
	}
}

// sessions.Open picks this backend for both URL schemes.
func TestSessionsOpenSchemes(t *testing.T) {
	db := newTestDB(t)
	for _, scheme := range []string{"postgres", "postgresql", "POSTGRES"} {
		_, rest, _ := strings.Cut(db.URL, "://")
		st, err := sessions.Open(t.Context(), scheme+"://"+rest)
		if err != nil {
			t.Fatalf("sessions.Open(%s://...) error: %v", scheme, err)
		}
		if _, ok := st.(*postgres.Store); !ok {
			t.Errorf("sessions.Open(%s://...) = %T, want *postgres.Store", scheme, st)
		}
		if _, err := st.ListSessions(t.Context(), 1); err != nil {
			t.Errorf("ListSessions through sessions.Open(%s://...) error: %v", scheme, err)
		}
		st.Close()
	}
}

// The database, not the process, keeps audit records append-only.
func TestAuditAppendOnlyInDatabase(t *testing.T) {
	db := newTestDB(t)
	st := openStore(t, db)
	if _, err := st.AppendAudit(t.Context(), sessions.NewAuditRecord{Type: "t"}); err != nil {
		t.Fatal(err)
	}
	c := db.conn(t)
	for _, sql := range []string{
		"UPDATE audit_records SET payload = '{}'",
		"DELETE FROM audit_records",
		"TRUNCATE audit_records",
	} {
		if _, err := c.Exec(t.Context(), sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s error = %v, want the append-only refusal", sql, err)
		}
	}
	if rep, err := st.VerifyAudit(t.Context(), nil); err != nil || !rep.OK || rep.Records != 2 {
		t.Errorf("VerifyAudit = %+v, %v; want the key record and one more, intact", rep, err)
	}
}
