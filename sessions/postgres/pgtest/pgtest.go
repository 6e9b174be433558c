// Package pgtest gives tests a private PostgreSQL schema on the server named
// by OPENPROGRAM_TEST_DATABASE_URL, dropped when the test ends. The store's
// own suites, the runtime's memory tools and the end-to-end tests share it:
//
//	u := pgtest.URL(t, "op_e2e") // base URL with search_path=op_e2e_<random>
//	st, err := sessions.Open(ctx, u)
//
// Without the variable a test fails under CI=true (the PostgreSQL runs are
// required there) and skips, saying why, elsewhere.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the PostgreSQL server tests may create schemas on.
const EnvURL = "OPENPROGRAM_TEST_DATABASE_URL"

// Required fails tb under CI=true with why, and skips it elsewhere.
func Required(tb testing.TB, why string) {
	tb.Helper()
	skipOrFail(tb, why+"; set "+EnvURL+"=postgres://user@host:5432/db?sslmode=disable")
}

// skipOrFail fails tb under CI=true with msg, and skips it elsewhere.
func skipOrFail(tb testing.TB, msg string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg + " (CI=true: the PostgreSQL runs are required)")
	}
	tb.Skip(msg)
}

// BaseURL returns $OPENPROGRAM_TEST_DATABASE_URL, or ends the test through
// Required.
func BaseURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		Required(tb, EnvURL+" is unset, so the PostgreSQL runs cannot happen")
	}
	return u
}

// randomName returns prefix_<16 random hex digits>.
func randomName(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// Schema creates a fresh schema <prefix>_<16 hex> on the server at base,
// drops it with everything in it when the test ends, and returns its name.
func Schema(tb testing.TB, base, prefix string) string {
	tb.Helper()
	schema := randomName(prefix)
	Exec(tb, base, "CREATE SCHEMA "+schema)
	tb.Cleanup(func() { Exec(tb, base, "DROP SCHEMA "+schema+" CASCADE") })
	return schema
}

// URL returns BaseURL with search_path set to a fresh Schema.
func URL(tb testing.TB, prefix string) string {
	tb.Helper()
	base := BaseURL(tb)
	return WithParams(base, map[string]string{"search_path": Schema(tb, base, prefix)})
}

// Role creates a login role <prefix>_<16 hex> with the given CONNECTION
// LIMIT (-1: none) and a schema of the same name that it owns and has as
// its search_path. The search_path is set on the role, so its connections
// need no search_path parameter (which PgBouncer refuses). When the test
// ends it terminates the role's backends and drops the schema, with
// everything in it, and the role. It returns base with the role as user
// and no password: the server must trust the connection, as a test
// server does. base's user needs CREATEROLE.
func Role(tb testing.TB, base, prefix string, limit int) string {
	tb.Helper()
	name := randomName(prefix)
	Exec(tb, base, fmt.Sprintf("CREATE ROLE %s LOGIN CONNECTION LIMIT %d", name, limit))
	tb.Cleanup(func() {
		Exec(tb, base, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", name)
		Exec(tb, base, "DROP SCHEMA IF EXISTS "+name+" CASCADE")
		Exec(tb, base, "DROP ROLE "+name)
	})
	Exec(tb, base, fmt.Sprintf("CREATE SCHEMA %s AUTHORIZATION %s", name, name))
	Exec(tb, base, fmt.Sprintf("ALTER ROLE %s SET search_path = %s", name, name))
	return WithUser(base, name)
}

// WithUser returns dsn with user as its user and no password, for both URL
// and key=value connection strings.
func WithUser(dsn, user string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			panic(fmt.Sprintf("pgtest: parse %s: %v", EnvURL, err))
		}
		u.User = url.User(user)
		return u.String()
	}
	return dsn + fmt.Sprintf(" user='%s' password=''", user)
}

// WithParams returns dsn with the runtime parameters set, for both URL and
// key=value connection strings.
func WithParams(dsn string, params map[string]string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			panic(fmt.Sprintf("pgtest: parse %s: %v", EnvURL, err))
		}
		q := u.Query()
		for k, v := range params {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	for k, v := range params {
		dsn += fmt.Sprintf(" %s='%s'", k, v)
	}
	return dsn
}

// Exec runs sql on a short-lived connection to dsn and fails tb on error.
func Exec(tb testing.TB, dsn, sql string, args ...any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connect to the PostgreSQL test server: %v", err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, sql, args...); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}
