package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"
	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// A server the store never reached (a wrong port, a stopped server) fails
// Open at once, naming the address and asking whether PostgreSQL runs;
// it is not waited for like a restart, and the pool advice is not given.
func TestOpenUnreachableFailsFast(t *testing.T) {
	addr := closedPort(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*postgres.DefaultAcquireWait)
	defer cancel()
	start := time.Now()
	st, err := postgres.Open(ctx, "postgres://op:hunter2secret@"+addr+"/db?sslmode=disable")
	elapsed := time.Since(start)
	if err == nil {
		st.Close()
		t.Fatal("Open(closed port) succeeded")
	}
	if elapsed >= postgres.DefaultAcquireWait/2 {
		t.Errorf("Open(closed port) failed after %v, want it to fail without waiting (the restart wait is %v)", elapsed, postgres.DefaultAcquireWait)
	}
	msg := err.Error()
	for _, want := range []string{"cannot reach PostgreSQL at " + addr, "is PostgreSQL running"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Open(closed port) error = %q, want it to contain %q", msg, want)
		}
	}
	for _, bad := range []string{"hunter2secret", "max_connections"} {
		if strings.Contains(msg, bad) {
			t.Errorf("Open(closed port) error = %q, must not contain %q", msg, bad)
		}
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Open(closed port) error = %v, want it to wrap ECONNREFUSED", err)
	}
}

// The classification looks at error types: a name that does not resolve
// and a failed dial are unreachable; an answer from a server (on any of
// several addresses) is not; 53300 and 57P03 are refusals worth waiting
// out.
func TestConnectErrorClasses(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	dns := &net.DNSError{Err: "no such host", Name: "db.invalid", IsNotFound: true}
	read := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	auth := &pgconn.PgError{Code: "28P01"}
	for _, tc := range []struct {
		name        string
		err         error
		unreachable bool
		refusal     bool
	}{
		{"refused dial", fmt.Errorf("connect: %w", dial), true, false},
		{"unknown host", fmt.Errorf("hostname resolving error: %w", errors.Join(dns)), true, false},
		{"reset read", read, false, false},
		{"refused here, auth failed there", errors.Join(dial, auth), false, false},
		{"53300", fmt.Errorf("connect: %w", &pgconn.PgError{Code: "53300"}), false, true},
		{"57P03", &pgconn.PgError{Code: "57P03"}, false, true},
		{"other", errors.New("boom"), false, false},
	} {
		if got := postgres.Unreachable(tc.err); got != tc.unreachable {
			t.Errorf("%s: unreachable = %v, want %v", tc.name, got, tc.unreachable)
		}
		if why, saturated := postgres.Refusal(tc.err); (why != "") != tc.refusal || saturated != tc.refusal {
			t.Errorf("%s: refusal = %q, %v; want refusal %v", tc.name, why, saturated, tc.refusal)
		}
	}
}

// proxy forwards a loopback address to the test server and can be stopped
// (the server "restarts": connections refused, open ones cut) and started
// again on the same address.
type proxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	l      net.Listener
	conns  []net.Conn
}

func (p *proxy) start() {
	p.t.Helper()
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Errorf("listen on %s: %v", p.addr, err)
		return
	}
	p.mu.Lock()
	p.l = l
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
}

func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// A restart of a server the store was using is waited out, and the wait is
// logged at info with the address; past the wait the call fails asking
// whether PostgreSQL runs, without the pool advice.
func TestRestartIsWaitedOut(t *testing.T) {
	db := newTestDB(t)
	u, err := url.Parse(db.URL)
	if err != nil || u.Host == "" {
		pgtest.Required(t, "the restart test proxies the server's address, which must be a postgres:// URL with a host")
	}
	p := &proxy{t: t, addr: closedPort(t), target: u.Host}
	p.start()
	t.Cleanup(p.stop)
	u.Host = p.addr
	// The store logs from the calling goroutine (and slog's handler
	// serialises writes), so the buffer is read after the call returns.
	var logs bytes.Buffer
	st, err := postgres.OpenWith(t.Context(), u.String(),
		&sessions.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatalf("Open through the proxy: %v", err)
	}
	defer st.Close()

	p.stop()
	postgres.ResetPool(st)
	restart := time.AfterFunc(300*time.Millisecond, p.start)
	defer restart.Stop()
	start := time.Now()
	if _, err := st.ListSessions(t.Context(), 1); err != nil {
		t.Fatalf("ListSessions while the server restarts for 300ms: %v, want it to wait and succeed", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("ListSessions returned after %v, before the server listened again", d)
	}
	if got := logs.String(); !strings.Contains(got, "level=INFO msg=\"waiting for the database\" address="+p.addr) {
		t.Errorf("log = %q, want an info line saying it waits for the database at %s", got, p.addr)
	}

	p.stop()
	postgres.ResetPool(st)
	postgres.SetAcquireWait(t, st, 300*time.Millisecond)
	_, err = st.ListSessions(t.Context(), 1)
	if err == nil || !strings.Contains(err.Error(), p.addr) || !strings.Contains(err.Error(), "is PostgreSQL running?") ||
		strings.Contains(err.Error(), "max_connections") {
		t.Errorf("ListSessions with the server gone past the wait = %v, want the address and \"is PostgreSQL running?\", no pool advice", err)
	}
}

// With NoMigrate an empty schema is ErrNoStore and stays empty, an older
// schema is ErrMigrationsPending and keeps its version, and a current one
// opens.
func TestOpenNoMigrateChangesNothing(t *testing.T) {
	db := newTestDB(t)
	ctx := t.Context()
	look := &sessions.Options{NoMigrate: true}
	tables := func() int {
		t.Helper()
		var n int
		if err := db.conn(t).QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = $1", db.Schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if st, err := postgres.OpenWith(ctx, db.URL, look); !errors.Is(err, sessions.ErrNoStore) {
		if st != nil {
			st.Close()
		}
		t.Errorf("NoMigrate open of an empty schema = %v, want ErrNoStore", err)
	}
	if n := tables(); n != 0 {
		t.Errorf("the empty schema holds %d tables after a NoMigrate open, want 0", n)
	}

	openStore(t, db).Close()
	st, err := postgres.OpenWith(ctx, db.URL, look)
	if err != nil {
		t.Fatalf("NoMigrate open of a current schema: %v", err)
	}
	if _, err := st.ListSessions(ctx, 1); err != nil {
		t.Errorf("ListSessions through a NoMigrate open: %v", err)
	}
	st.Close()

	db.exec(t, "DELETE FROM openprogram_schema_migrations WHERE version = (SELECT max(version) FROM openprogram_schema_migrations)")
	var before int
	if err := db.conn(t).QueryRow(ctx, "SELECT max(version) FROM openprogram_schema_migrations").Scan(&before); err != nil {
		t.Fatal(err)
	}
	if st, err := postgres.OpenWith(ctx, db.URL, look); !errors.Is(err, sessions.ErrMigrationsPending) {
		if st != nil {
			st.Close()
		}
		t.Errorf("NoMigrate open of a schema one version behind = %v, want ErrMigrationsPending", err)
	}
	var after int
	if err := db.conn(t).QueryRow(ctx, "SELECT max(version) FROM openprogram_schema_migrations").Scan(&after); err != nil || after != before {
		t.Errorf("schema version after the NoMigrate open = %d, %v; want %d, unchanged", after, err, before)
	}
}
