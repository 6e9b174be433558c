package pgtest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// BouncerOptions configures [PgBouncer]. The zero value is a pool of 20
// server connections per database and user, for at most 1,000 clients.
type BouncerOptions struct {
	// PoolSize is PgBouncer's default_pool_size: server connections per
	// database and user pair. 0 means 20.
	PoolSize int
	// MaxClients is max_client_conn. 0 means 1,000.
	MaxClients int
	// Users may connect through the bouncer besides base's user (PgBouncer
	// trusts only the users its auth_file lists).
	Users []string
}

// Bouncer is a running PgBouncer.
type Bouncer struct {
	// URL is base pointed at the bouncer (same user and database).
	URL string
	// AdminURL is the bouncer's admin console (database pgbouncer, base's
	// user), which speaks the simple query protocol only.
	AdminURL string
	// Log is what PgBouncer printed so far.
	Log func() string
}

// bouncerStopTimeout bounds how long a stopping PgBouncer may take.
const bouncerStopTimeout = 10 * time.Second

// PgBouncer starts Debian's pgbouncer in transaction pooling mode on a free
// loopback port in front of the server that base names, with trust
// authentication, stops it when the test ends and returns it. Its
// configuration lives in a temporary directory. Without a pgbouncer binary
// on PATH (or in /usr/sbin) the test fails under CI=true and skips
// elsewhere. As root, PgBouncer runs as the postgres user (else nobody),
// since it refuses to run as root.
func PgBouncer(tb testing.TB, base string, opts *BouncerOptions) *Bouncer {
	tb.Helper()
	if opts == nil {
		opts = &BouncerOptions{}
	}
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr == nil {
			bin, err = "/usr/sbin/pgbouncer", nil
		}
	}
	if err != nil {
		skipOrFail(tb, "pgbouncer is not installed, so the tests through a transaction pooler cannot run; apt-get install pgbouncer")
	}
	cfg, err := pgconn.ParseConfig(base)
	if err != nil {
		tb.Fatalf("parse %s: %v", EnvURL, err)
	}
	poolSize, maxClients := cmp.Or(opts.PoolSize, 20), cmp.Or(opts.MaxClients, 1000)

	dir := tb.TempDir()
	// PgBouncer, maybe no longer root, reads these; nothing in them is secret.
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	users := append([]string{cfg.User}, opts.Users...)
	var auth strings.Builder
	for _, u := range users {
		fmt.Fprintf(&auth, "%q \"\"\n", u)
	}
	writeFile(tb, filepath.Join(dir, "users.txt"), auth.String())
	port := freePort(tb)
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = %d
max_db_connections = 0
ignore_startup_parameters = extra_float_digits
server_login_retry = 1
admin_users = %s
log_connections = 0
log_disconnections = 0
`, cfg.Host, cfg.Port, port, filepath.Join(dir, "users.txt"), poolSize, maxClients, cfg.User)
	iniPath := filepath.Join(dir, "pgbouncer.ini")
	writeFile(tb, iniPath, ini)

	args := []string{iniPath}
	if os.Geteuid() == 0 {
		runAs := "nobody"
		if _, err := user.Lookup("postgres"); err == nil {
			runAs = "postgres"
		}
		args = []string{"-u", runAs, iniPath}
	}
	var (
		mu  sync.Mutex
		out bytes.Buffer
	)
	logf := func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
	cmd := exec.Command(bin, args...)
	w := &lockedWriter{mu: &mu, w: &out}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start pgbouncer: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(bouncerStopTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			tb.Fatalf("pgbouncer exited at start:\n%s", logf())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("pgbouncer did not listen on %s within 10s:\n%s", addr, logf())
		}
		time.Sleep(20 * time.Millisecond)
	}
	u, err := withHostPort(base, "127.0.0.1", port)
	if err != nil {
		tb.Fatal(err)
	}
	admin := u
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		p, err := url.Parse(u)
		if err != nil {
			tb.Fatal(err)
		}
		p.Path, p.RawQuery = "/pgbouncer", "sslmode=disable&default_query_exec_mode=simple_protocol"
		admin = p.String()
	} else {
		admin += " dbname=pgbouncer sslmode=disable default_query_exec_mode=simple_protocol"
	}
	return &Bouncer{URL: u, AdminURL: admin, Log: logf}
}

// Clients returns how many client connections the bouncer holds for user
// (active and waiting, from SHOW POOLS).
func (b *Bouncer) Clients(ctx context.Context, user string) (int, error) {
	c, err := pgx.Connect(ctx, b.AdminURL)
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, "SHOW POOLS")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return 0, err
		}
		row := map[string]any{}
		for i, f := range rows.FieldDescriptions() {
			row[f.Name] = vals[i]
		}
		if fmt.Sprint(row["user"]) != user {
			continue
		}
		for _, col := range []string{"cl_active", "cl_waiting"} {
			v, _ := strconv.Atoi(fmt.Sprint(row[col]))
			n += v
		}
	}
	return n, rows.Err()
}

// withHostPort returns dsn with its host and port replaced.
func withHostPort(dsn, host string, port int) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse %s: %w", EnvURL, err)
		}
		u.Host = net.JoinHostPort(host, strconv.Itoa(port))
		return u.String(), nil
	}
	return dsn + fmt.Sprintf(" host=%s port=%d", host, port), nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writeFile(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w.Len() > 1<<20 {
		return len(p), nil // enough to diagnose; bound the rest
	}
	return l.w.Write(p)
}

// Connections returns how many client backends of the server at base match
// filter (an SQL condition on pg_stat_activity; "" for all), not counting
// the connection asking.
func Connections(ctx context.Context, base, filter string, args ...any) (int, error) {
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var n int
	q := "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
	if filter != "" {
		q += " AND (" + filter + ")"
	}
	err = c.QueryRow(ctx, q, args...).Scan(&n)
	return n, err
}
