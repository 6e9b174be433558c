package cli_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
)

// TestDoctorPostgresConnections: on a PostgreSQL store doctor reports the
// server's max_connections, the connections in use and whether it sees a
// pooler; a SQLite store has no such check.
func TestDoctorPostgresConnections(t *testing.T) {
	env, _, _ := healthy(t)
	if c := parseDoctor(t, runCLI(t, env, "doctor").stdout); hasCheck(c, "postgres connections") {
		t.Errorf("doctor on SQLite has a postgres connections check: %+v", c)
	}
	env = append(env, "OPENPROGRAM_DATABASE_URL="+pgtest.URL(t, "op_cli_doctor"))
	// The install's audit anchor belongs to its SQLite log: moving to
	// PostgreSQL is a deliberate change of store, accepted once.
	if r := runCLI(t, env, "mcp", "serve"); r.code != 1 || !strings.Contains(r.stderr, "audit reanchor --yes") {
		t.Fatalf("mcp serve on a new store under an old anchor = exit %d, stderr %q; want the anchor refusal", r.code, r.stderr)
	}
	mustCLI(t, env, "audit", "reanchor", "--yes")
	mustCLI(t, env, "mcp", "serve") // creates the store: doctor migrates nothing
	r := runCLI(t, env, "doctor")
	pc := findCheck(t, parseDoctor(t, r.stdout), "postgres connections")
	if pc.status != "ok" || !strings.Contains(pc.info, "max_connections ") || !strings.Contains(pc.info, " in use") ||
		!strings.Contains(pc.info, "no pooler") {
		t.Errorf("postgres connections check = %+v, want ok with max_connections, in use, no pooler", pc)
	}
}

func hasCheck(checks []doctorCheck, name string) bool {
	for _, c := range checks {
		if c.name == name {
			return true
		}
	}
	return false
}

// TestDoctorPostgresEmptySchema: doctor on an empty PostgreSQL schema says
// there is no store yet and leaves the schema empty (it runs no migration).
func TestDoctorPostgresEmptySchema(t *testing.T) {
	env, _ := fresh(t)
	token := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
	base := pgtest.BaseURL(t)
	schema := pgtest.Schema(t, base, "op_cli_doctor_empty")
	env = append(env, "OPENPROGRAM_MCP_TOKEN="+token,
		"OPENPROGRAM_DATABASE_URL="+pgtest.WithParams(base, map[string]string{"search_path": schema}))
	r := runCLI(t, env, "doctor")
	if st := findCheck(t, parseDoctor(t, r.stdout), "store"); st.status != "warn" || !strings.Contains(st.info, "no store yet") {
		t.Errorf("store check on an empty schema = %+v, want a warning that there is no store yet", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", schema).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("doctor left %d tables in the empty schema, want 0", n)
	}
}

// TestStoreUnreachable: a store URL with a port nothing listens on fails a
// command at once with the address and "is PostgreSQL running?", not after
// the restart wait with the max_connections advice.
func TestStoreUnreachable(t *testing.T) {
	env, _ := fresh(t)
	mustCLI(t, env, "mcp", "token", "create")
	addr := closedLoopbackPort(t)
	env = append(env, "OPENPROGRAM_DATABASE_URL=postgres://op:hunter2secret@"+addr+"/db?sslmode=disable")
	start := time.Now()
	r := runCLI(t, env, "sessions", "list")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("sessions list on a closed port took %v, want it to fail without the 20s restart wait", d)
	}
	if r.code != 1 || !strings.Contains(r.stderr, addr) || !strings.Contains(r.stderr, "is PostgreSQL running") ||
		strings.Contains(r.stderr, "max_connections") || strings.Contains(r.stderr, "hunter2secret") {
		t.Errorf("sessions list on a closed port: exit %d, stderr %q; want 1 with the address and the hint, no password", r.code, r.stderr)
	}
}

// closedLoopbackPort returns a loopback host:port nothing listens on.
func closedLoopbackPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
