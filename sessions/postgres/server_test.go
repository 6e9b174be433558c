package postgres_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openprogram/openprogram/sessions/postgres"
	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
)

// Connections reports the server's limit and use, and tells a direct
// connection from one through PgBouncer.
func TestConnections(t *testing.T) {
	base := baseURL(t)
	ctx := t.Context()
	direct := openStore(t, newTestDB(t))
	got, err := direct.Connections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxConnections <= 0 || got.InUse < 1 || got.Pooler || got.PoolMaxConns != postgres.DefaultMaxConns {
		t.Errorf("Connections() direct = %+v, want max_connections > 0, in use >= 1, no pooler, pool of %d",
			got, postgres.DefaultMaxConns)
	}

	roleURL := pgtest.Role(t, base, "op_test_conns", -1)
	u, err := pgconn.ParseConfig(roleURL)
	if err != nil {
		t.Fatal(err)
	}
	bouncer := pgtest.PgBouncer(t, base, &pgtest.BouncerOptions{Users: []string{u.User}})
	st, err := postgres.Open(ctx, pgtest.WithUser(bouncer.URL, u.User))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err = st.Connections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.MaxConnections <= 0 || got.InUse < 1 || !got.Pooler {
		t.Errorf("Connections() through PgBouncer = %+v, want max_connections > 0, in use >= 1, a pooler", got)
	}
}
