package memory_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"
	"github.com/openprogram/openprogram/sessions/sqlite"
)

// envDatabaseURL names the PostgreSQL server for the PostgreSQL runs; each
// test gets a fresh schema there, dropped afterwards.
const envDatabaseURL = "OPENPROGRAM_TEST_DATABASE_URL"

type backend struct {
	name string
	open func(tb testing.TB) sessions.Store
}

var backends = []backend{
	{"sqlite", openSQLite},
	{"postgres", openPostgres},
}

// onBackends runs fn as a subtest against a fresh store of every backend.
func onBackends(t *testing.T, fn func(t *testing.T, s sessions.Store)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

func openSQLite(tb testing.TB) sessions.Store {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "openprogram.db"))
	if err != nil {
		tb.Fatalf("sqlite.Open: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// postgresURL returns the server URL, failing under CI=true when there is
// none (the PostgreSQL runs must happen there) and skipping, saying why,
// elsewhere.
func postgresURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(envDatabaseURL)
	if u == "" {
		msg := envDatabaseURL + " is unset, so the PostgreSQL backend runs cannot happen; set it to postgres://user@host:5432/db?sslmode=disable"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg + " (CI=true: the PostgreSQL runs are required)")
		}
		tb.Skip(msg)
	}
	return u
}

func openPostgres(tb testing.TB) sessions.Store {
	tb.Helper()
	st, _ := openPostgresSchema(tb)
	return st
}

// openPostgresSchema opens a store in a fresh schema and returns the
// schema's name too.
func openPostgresSchema(tb testing.TB) (sessions.Store, string) {
	tb.Helper()
	base := postgresURL(tb)
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "op_rt_test_" + hex.EncodeToString(b[:])
	admin := func(sql string) {
		tb.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Fatalf("connect to %s: %v", envDatabaseURL, err)
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, sql); err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
	}
	admin("CREATE SCHEMA " + schema)
	tb.Cleanup(func() { admin("DROP SCHEMA " + schema + " CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("parse %s: %v", envDatabaseURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	st, err := postgres.Open(context.Background(), u.String())
	if err != nil {
		tb.Fatalf("postgres.Open: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st, schema
}
