package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
)

// EnvDatabaseURL names the PostgreSQL server the tests use. Each test gets
// its own schema there, dropped afterwards.
const EnvDatabaseURL = pgtest.EnvURL

// containerImage is the server testcontainers-go starts when EnvDatabaseURL
// is unset and a Docker engine is reachable.
const containerImage = "postgres:16-alpine"

var server struct {
	once      sync.Once
	url       string // base URL, "" when no server is available
	why       string // why there is no server
	container *tcpostgres.PostgresContainer
}

// baseURL returns the server's URL: EnvDatabaseURL, else a container
// started once for the whole test binary. With neither it fails the test
// when CI=true (CI must run the PostgreSQL suite) and skips it, saying why,
// elsewhere.
func baseURL(tb testing.TB) string {
	tb.Helper()
	server.once.Do(func() {
		if u := os.Getenv(EnvDatabaseURL); u != "" {
			server.url = u
			return
		}
		server.url, server.why = startContainer()
	})
	if server.url == "" {
		pgtest.Required(tb, fmt.Sprintf("no PostgreSQL for the postgres backend tests: %s unset and %s (or start Docker)", EnvDatabaseURL, server.why))
	}
	return server.url
}

// startContainer starts a PostgreSQL container if a Docker engine answers
// a cheap health probe, and returns its URL or why it could not.
func startContainer() (u, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := dockerHealthy(ctx); err != nil {
		return "", "no Docker engine is reachable (" + err.Error() + ")"
	}
	c, err := tcpostgres.Run(ctx, containerImage,
		tcpostgres.WithDatabase("openprogram_test"),
		tcpostgres.BasicWaitStrategies())
	if err != nil {
		if c != nil {
			_ = testcontainers.TerminateContainer(c)
		}
		return "", "starting a PostgreSQL container failed: " + err.Error()
	}
	server.container = c
	u, err = c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		return "", "reading the container's address failed: " + err.Error()
	}
	return u, ""
}

// dockerHealthy asks the Docker engine for its info, the way
// testcontainers.SkipIfProviderIsNotHealthy does, without skipping.
func dockerHealthy(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("docker provider panicked: %v", r)
		}
	}()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return err
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return p.Health(ctx)
}

// stopContainer terminates the container, if one was started.
func stopContainer() {
	if server.container != nil {
		_ = testcontainers.TerminateContainer(server.container)
		server.container = nil
	}
}

func randomSuffix() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// testDB is one test's private schema on the server.
type testDB struct {
	Schema  string
	AppName string // application_name of the store's connections
	URL     string // base URL with search_path and application_name set
	base    string
}

// newTestDB creates a fresh schema op_test_<random> and drops it, with
// everything in it, when the test ends.
func newTestDB(tb testing.TB) *testDB {
	tb.Helper()
	base := baseURL(tb)
	schema := pgtest.Schema(tb, base, "op_test")
	db := &testDB{Schema: schema, AppName: schema, base: base}
	db.URL = pgtest.WithParams(base, map[string]string{"search_path": db.Schema, "application_name": db.AppName})
	return db
}

// conn opens a plain connection to the test's schema, closed at cleanup.
func (db *testDB) conn(tb testing.TB) *pgx.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, pgtest.WithParams(db.base, map[string]string{"search_path": db.Schema, "application_name": "op_test_admin"}))
	if err != nil {
		tb.Fatalf("connect to %s: %v", db.Schema, err)
	}
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// exec runs sql in the test's schema on a short-lived connection.
func (db *testDB) exec(tb testing.TB, sql string, args ...any) {
	tb.Helper()
	pgtest.Exec(tb, pgtest.WithParams(db.base, map[string]string{"search_path": db.Schema, "application_name": "op_test_admin"}), sql, args...)
}

// terminate kills every server backend of the store (its application_name)
// from another connection, as an administrator or a server restart would,
// and returns how many it killed.
func (db *testDB) terminate(tb testing.TB) int {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, db.base)
	if err != nil {
		tb.Fatalf("connect to the test server: %v", err)
	}
	defer c.Close(context.Background())
	var pids []int32
	// Pick the pids first (MATERIALIZED), so pg_terminate_backend never
	// runs on a row the filter would have dropped.
	if err := c.QueryRow(ctx, `WITH victims AS MATERIALIZED (
			SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid())
		SELECT COALESCE(array_agg(pid), '{}') FROM victims WHERE pg_terminate_backend(pid)`, db.AppName).Scan(&pids); err != nil {
		tb.Fatalf("pg_terminate_backend: %v", err)
	}
	// pg_terminate_backend only signals; wait until those backends are gone
	// (the pool may already have opened new ones).
	for deadline := time.Now().Add(10 * time.Second); ; {
		var left int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", pids).Scan(&left); err != nil {
			tb.Fatal(err)
		}
		if left == 0 {
			return len(pids)
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d backends of %s survived pg_terminate_backend", left, db.AppName)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
