package memory_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/runtime/builtin/memory/memorytest"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/sqlite"
)

// The memory tools on SQLite. The same suite runs on PostgreSQL in the cli
// module (cli/memory_postgres_test.go), which depends on every backend: this
// module stays free of the PostgreSQL driver.
func TestMemoryToolsOnSQLite(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) sessions.Store { return openSQLite(t) })
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
