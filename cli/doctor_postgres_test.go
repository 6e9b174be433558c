package cli_test

import (
	"strings"
	"testing"

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
