package cli_test

import (
	"context"
	"testing"

	"github.com/openprogram/openprogram/runtime/builtin/memory/memorytest"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"
	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
)

// TestMemoryToolsOnPostgres runs the built-in memory tools' suite on
// PostgreSQL. It lives here, in the module that composes every backend, so
// the runtime module (which runs the same suite on SQLite) does not depend on
// the PostgreSQL driver.
func TestMemoryToolsOnPostgres(t *testing.T) {
	base := pgtest.BaseURL(t)
	memorytest.Run(t, func(t *testing.T) sessions.Store {
		schema := pgtest.Schema(t, base, "op_cli_memory")
		st, err := postgres.Open(context.Background(), pgtest.WithParams(base, map[string]string{"search_path": schema}))
		if err != nil {
			t.Fatalf("postgres.Open: %v", err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	})
}
