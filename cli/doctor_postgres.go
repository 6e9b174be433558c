package cli

import (
	"context"
	"fmt"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"
)

// postgresChecks are doctor's checks of a PostgreSQL store; none for any
// other store.
func postgresChecks(ctx context.Context, st sessions.Store) []check {
	pg, ok := st.(*postgres.Store)
	if !ok {
		return nil
	}
	return []check{connectionsCheck(ctx, pg)}
}

// connectionsCheck reports the server's max_connections, the connections
// in use, and whether a pooler sits in between.
func connectionsCheck(ctx context.Context, pg *postgres.Store) check {
	const name = "postgres connections"
	conns, err := pg.Connections(ctx)
	if err != nil {
		return check{name: name, warn: true, info: err.Error(), fix: "check that the database is reachable"}
	}
	via := "no pooler seen"
	if conns.Pooler {
		via = "through a connection pooler"
	}
	info := fmt.Sprintf("max_connections %d, %d in use, %s; each mcp serve process opens at most %d (pool_max_conns)",
		conns.MaxConnections, conns.InUse, via, conns.PoolMaxConns)
	if !conns.Pooler && conns.InUse*5 >= conns.MaxConnections*4 {
		return check{name: name, warn: true, info: info,
			fix: "the server is near max_connections: put PgBouncer (pool_mode = transaction) in front of it, or raise max_connections"}
	}
	return check{name: name, ok: true, info: info}
}
