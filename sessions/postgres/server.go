package postgres

import (
	"context"
	"fmt"
)

// Connections is what the server says about its connections, for
// diagnostics such as `openprogram doctor`.
type Connections struct {
	// MaxConnections is the server's max_connections.
	MaxConnections int
	// InUse counts the client backends connected to the server now, the
	// one asking included (all of them for a superuser or a member of
	// pg_read_all_stats; others see every backend too, with fewer details).
	InUse int
	// Pooler reports a connection pooler such as PgBouncer between this
	// process and the server: the backend that ran the query is not the
	// one the connection's startup named (a pooler hands out its own
	// process ids and cancel keys).
	Pooler bool
	// PoolMaxConns is this store's bound on its own connections
	// (pool_max_conns).
	PoolMaxConns int
}

// Connections asks the server for its connection limit and use, and
// whether a pooler sits in between. It runs one statement, so it works
// behind a transaction pooler.
func (s *Store) Connections(ctx context.Context) (Connections, error) {
	out := Connections{PoolMaxConns: int(s.pool.Config().MaxConns)}
	c, err := s.acquire(ctx)
	if err != nil {
		return Connections{}, fmt.Errorf("read the server's connections: %w", err)
	}
	defer c.Release()
	var pid uint32
	err = c.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
			(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int,
			pg_backend_pid()`).Scan(&out.MaxConnections, &out.InUse, &pid)
	if err != nil {
		return Connections{}, fmt.Errorf("read the server's connections: %w", err)
	}
	out.Pooler = pid != c.Conn().PgConn().PID()
	return out, nil
}
