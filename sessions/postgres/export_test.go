package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openprogram/openprogram/sessions/internal/auditchain"
)

// PoolConfig returns the configuration of st's pool.
func PoolConfig(st *Store) *pgxpool.Config { return st.pool.Config() }

// ResetPool closes st's idle connections.
func ResetPool(st *Store) { st.pool.Reset() }

// SetAcquireWait bounds st's connection retries to d until tb ends.
func SetAcquireWait(tb testing.TB, st *Store, d time.Duration) {
	old := st.acquireWait
	st.acquireWait = d
	tb.Cleanup(func() { st.acquireWait = old })
}

// Unreachable reports whether err, from connecting, means no server
// answered, and Refusal why a server that answered is waited out.
var (
	Unreachable = unreachable
	Refusal     = refusal
)

// AuditWritersTx reads the stored writer heads within tx.
func AuditWritersTx(ctx context.Context, tx pgx.Tx) ([]auditchain.Writer, error) {
	return auditTx{tx}.Writers(ctx)
}
