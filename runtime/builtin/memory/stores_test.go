package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"
	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
	"github.com/openprogram/openprogram/sessions/sqlite"
)

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

func openPostgres(tb testing.TB) sessions.Store {
	tb.Helper()
	st, _ := openPostgresSchema(tb)
	return st
}

// openPostgresSchema opens a store in a fresh schema and returns the
// schema's name too.
func openPostgresSchema(tb testing.TB) (sessions.Store, string) {
	tb.Helper()
	base := pgtest.BaseURL(tb)
	schema := pgtest.Schema(tb, base, "op_rt_test")
	st, err := postgres.Open(context.Background(), pgtest.WithParams(base, map[string]string{"search_path": schema}))
	if err != nil {
		tb.Fatalf("postgres.Open: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st, schema
}
