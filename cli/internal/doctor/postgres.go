package doctor

import (
	"context"
	"fmt"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"
)

// postgresChecks are doctor's checks of a PostgreSQL store; none for any
// other store.
func postgresChecks(ctx context.Context, st sessions.Store) []Check {
	pg, ok := st.(*postgres.Store)
	if !ok {
		return nil
	}
	return []Check{connectionsCheck(ctx, pg)}
}

// connectionsCheck reports the server's max_connections, the connections
// in use, and whether a pooler sits in between.
func connectionsCheck(ctx context.Context, pg *postgres.Store) Check {
	const name = "postgres connections"
	conns, err := pg.Connections(ctx)
	if err != nil {
		return Check{Name: name, Warn: true, Info: err.Error(), Fix: "check that the database is reachable"}
	}
	via := "no pooler seen"
	if conns.Pooler {
		via = "through a connection pooler"
	}
	info := fmt.Sprintf("max_connections %d, %d in use, %s; each mcp serve process opens at most %d (pool_max_conns)",
		conns.MaxConnections, conns.InUse, via, conns.PoolMaxConns)
	if !conns.Pooler && conns.InUse*5 >= conns.MaxConnections*4 {
		return Check{Name: name, Warn: true, Info: info,
			Fix: "the server is near max_connections: put PgBouncer (pool_mode = transaction) in front of it, or raise max_connections"}
	}
	return Check{Name: name, OK: true, Info: info}
}
