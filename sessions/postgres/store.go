package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
)

func init() {
	open := func(ctx context.Context, url string, opts *sessions.Options) (sessions.Store, error) {
		st, err := OpenWith(ctx, url, opts)
		if err != nil {
			return nil, err
		}
		return st, nil
	}
	sessions.Register("postgres", open)
	sessions.Register("postgresql", open)
}

// DefaultApplicationName is the application_name the store's connections
// report to the server (visible in pg_stat_activity) unless the URL sets one.
const DefaultApplicationName = "openprogram"

// Store is a [sessions.Store] on a PostgreSQL database, used through a
// pgxpool connection pool. It is safe for concurrent use by many goroutines
// and, through the database, by many processes.
type Store struct {
	pool     *pgxpool.Pool
	auditKey []byte // nil: audit appends and verification fail closed
	// acquireWait bounds how long acquire keeps retrying a saturated or
	// restarting server.
	acquireWait time.Duration
	// addr is where the server is, for errors and logs: host and port,
	// never the URL (it may hold a password).
	addr string
	log  *slog.Logger // nil: nothing is logged
	// reached: a connection to the server was made once. Until then an
	// unreachable server is a wrong address or a stopped server, reported
	// at once; after, it is a restart, waited out.
	reached atomic.Bool
	// waiting: a call is waiting for the server (logged once per outage).
	waiting atomic.Bool

	taskRules // the sessions.TaskStore methods but PurgeExpiredTasks, over taskSQL
	auditLog  // AppendAudit, VerifyAudit, CheckAuditAnchor, over auditTx
}

// Pool defaults, for many processes sharing one server: every `mcp serve`
// process has its own pool, so a pool opens few connections, keeps none
// open for nothing (no minimum) and closes idle ones soon: a connection
// idling in one process is a slot another process may be waiting for
// (within DefaultAcquireWait). The health check
// is what closes idle connections, so it runs often enough for an idle pool
// to reach zero within DefaultMaxConnIdleTime + DefaultHealthCheckPeriod.
// The URL's own pgxpool parameters (pool_max_conns, pool_max_conn_idle_time,
// pool_health_check_period, ...) override them.
const (
	// DefaultMaxConns is a pool's connection bound unless the URL sets
	// pool_max_conns: one turn at a time per session, a handful of sessions
	// per client.
	DefaultMaxConns = 4
	// DefaultMaxConnIdleTime is how long a connection may sit idle unless
	// the URL sets pool_max_conn_idle_time.
	DefaultMaxConnIdleTime = time.Second
	// DefaultHealthCheckPeriod is how often idle connections are checked
	// (and closed when idle too long) unless the URL sets
	// pool_health_check_period.
	DefaultHealthCheckPeriod = 500 * time.Millisecond
	// DefaultQueryExecMode is the pgx query execution mode unless the URL
	// sets default_query_exec_mode. cache_describe uses unnamed prepared
	// statements only, so it is correct both on a direct connection and
	// behind a transaction-pooling PgBouncer (where the default
	// cache_statement fails with "prepared statement already exists"),
	// and it keeps one round trip per statement once a statement's
	// description is cached.
	DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	// DefaultAcquireWait bounds how long a call keeps retrying to get a
	// connection from a server that refuses more clients (SQLSTATE 53300),
	// is starting up or shutting down (57P03) or, once the store has
	// reached it, cannot be reached (a restart), before it fails. A server
	// the store never reached fails the first call at once.
	DefaultAcquireWait = 20 * time.Second
	// DefaultConnectTimeout bounds one connection attempt (a host that
	// drops packets) unless the URL sets connect_timeout.
	DefaultConnectTimeout = 10 * time.Second
)

var _ sessions.Store = (*Store)(nil)

// Open connects to the PostgreSQL database named by dsn (a postgres:// or
// postgresql:// URL, or a key=value connection string), runs the pending
// migrations and returns the store. The tables live in the first schema of
// the connection's search_path, which the URL may set
// (postgres://host/db?search_path=openprogram).
//
// Open fails with [sessions.ErrSchemaTooNew] when the schema was written by
// a newer version, and with [sessions.ErrNotDatabase] when the schema holds
// tables of the same names that OpenProgram did not create. A server it
// cannot reach (connection refused, unknown host, no answer within the
// connect timeout) fails Open at once with the server's address; a server
// that refuses more clients or is starting up is waited for, up to
// [DefaultAcquireWait].
//
// The store has no audit key; use [OpenWith] to append or verify audit
// records.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWith(ctx, dsn, nil)
}

// OpenWith is [Open] with options (nil: the zero [sessions.Options]). With
// an audit key it keys the audit log as [sessions.Options] describes, in
// the transaction that follows the migrations. Hosts sharing one database
// must share one key.
func OpenWith(ctx context.Context, dsn string, opts *sessions.Options) (*Store, error) {
	opts, err := auditchain.OpenOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	// URL schemes are case-insensitive (sessions.Open matches them so);
	// pgx only knows the lowercase ones.
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok {
		if l := strings.ToLower(scheme); l == "postgres" || l == "postgresql" {
			dsn = l + "://" + rest
		}
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx redacts the password in the connection string it quotes.
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = DefaultApplicationName
	}
	if err := applyPoolDefaults(dsn, cfg); err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		// Hand timestamps back in UTC whatever the server's or process's zone.
		c.TypeMap().RegisterType(&pgtype.Type{
			Name: "timestamptz", OID: pgtype.TimestamptzOID,
			Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC},
		})
		return nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store %s: %w", sessions.RedactURL(dsn), err)
	}
	st := &Store{pool: pool, auditKey: bytes.Clone(opts.AuditKey), acquireWait: DefaultAcquireWait,
		addr: serverAddr(cfg.ConnConfig.Config), log: opts.Logger}
	st.taskRules = newTaskRules(st)
	st.auditLog = newAuditLog(st, opts)
	if err := st.migrate(ctx, !opts.NoMigrate); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store %s: %w", sessions.RedactURL(dsn), err)
	}
	if st.auditKey != nil && opts.AdoptUnkeyedLog && !opts.NoMigrate {
		if err := st.keyAudit(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("open postgres store %s: %w", sessions.RedactURL(dsn), err)
		}
	}
	return st, nil
}

// Close closes every connection of the pool, waiting for those in use to be
// returned.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// applyPoolDefaults sets the pool defaults for many processes on the
// parameters dsn does not set itself.
func applyPoolDefaults(dsn string, cfg *pgxpool.Config) error {
	// pgconn keeps every parameter it does not know, pgx's and pgxpool's
	// included, in RuntimeParams: that tells which ones the dsn set, in URL
	// and key=value form alike.
	raw, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return err
	}
	set := func(key string) bool { _, ok := raw.RuntimeParams[key]; return ok }
	if !set("pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	if !set("pool_max_conn_idle_time") {
		cfg.MaxConnIdleTime = DefaultMaxConnIdleTime
	}
	if !set("pool_health_check_period") {
		cfg.HealthCheckPeriod = DefaultHealthCheckPeriod
	}
	if !set("default_query_exec_mode") {
		cfg.ConnConfig.DefaultQueryExecMode = DefaultQueryExecMode
	}
	if raw.ConnectTimeout == 0 { // neither connect_timeout nor PGCONNECT_TIMEOUT
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	return nil
}

// serverAddr names the server(s) of cfg as host:port (a Unix socket as its
// path), fallbacks after the first, with nothing secret in it.
func serverAddr(cfg pgconn.Config) string {
	one := func(host string, port uint16) string {
		if strings.HasPrefix(host, "/") {
			return host + "/.s.PGSQL." + strconv.Itoa(int(port))
		}
		return net.JoinHostPort(host, strconv.Itoa(int(port)))
	}
	addrs := []string{one(cfg.Host, cfg.Port)}
	for _, f := range cfg.Fallbacks {
		if a := one(f.Host, f.Port); !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	return strings.Join(addrs, ", ")
}

// querier is what the SQL helpers need from a pooled connection or a
// transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// run runs fn, a read or an idempotent single-statement write, on a pooled
// connection. When the connection turns out to be dead (the server
// restarted, or an administrator terminated the backend) run resets the
// pool, whose other idle connections are likely dead too, and runs fn once
// more on a fresh connection.
func (s *Store) run(ctx context.Context, fn func(q querier) error) error {
	return s.runRetrying(ctx, true, fn)
}

// once runs fn, a write that is not idempotent (a batch the server runs
// as one implicit transaction), on a pooled connection. Unlike run it
// retries, once, only a failure before anything was sent: a connection
// that died after the batch went out leaves its outcome unknown, and that
// is returned.
func (s *Store) once(ctx context.Context, fn func(q querier) error) error {
	return s.runRetrying(ctx, false, fn)
}

// runRetrying is run (idempotent: a dead connection's failure is retried)
// and once (not: only a failure before anything was sent is).
func (s *Store) runRetrying(ctx context.Context, idempotent bool, fn func(q querier) error) error {
	for attempt := 0; ; attempt++ {
		c, err := s.acquire(ctx)
		if err != nil {
			return err
		}
		err = fn(c)
		dead := err != nil && c.Conn().IsClosed()
		c.Release()
		if err == nil || attempt > 0 || ctx.Err() != nil || !(dead && idempotent || pgconn.SafeToRetry(err)) {
			return err
		}
		if dead {
			s.pool.Reset()
		}
	}
}

// tx runs fn in one transaction and commits it. Like run, it retries once
// on a fresh connection when the connection died, but only if the failure
// came before COMMIT was sent (the server then rolled the transaction
// back); a failed COMMIT on a dead connection is ambiguous and is returned.
func (s *Store) tx(ctx context.Context, opts pgx.TxOptions, fn func(tx pgx.Tx) error) error {
	for attempt := 0; ; attempt++ {
		c, err := s.acquire(ctx)
		if err != nil {
			return err
		}
		committing := false
		err = func() error {
			tx, err := c.BeginTx(ctx, opts)
			if err != nil {
				return err
			}
			defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
			if err := fn(tx); err != nil {
				return err
			}
			committing = true
			return tx.Commit(ctx)
		}()
		dead := err != nil && c.Conn().IsClosed()
		c.Release()
		if err == nil || attempt > 0 || ctx.Err() != nil {
			return err
		}
		if !pgconn.SafeToRetry(err) && !(dead && !committing) {
			return err
		}
		if dead {
			s.pool.Reset()
		}
	}
}

// Backoff between connection attempts to a saturated server: exponential
// from acquireBackoffMin to acquireBackoffMax, each sleep drawn at random
// from [d/2, d) so that processes refused together do not return together.
const (
	acquireBackoffMin = 25 * time.Millisecond
	acquireBackoffMax = time.Second
)

// acquire gets a pooled connection. When the server refuses a new
// connection because it is saturated, starting up or shutting down, or —
// once this store has reached it — cannot be reached (restarting), acquire
// retries with jittered exponential backoff for at most s.acquireWait,
// saying at info that it waits, then fails with an error that says what
// happened and what to change. A server this store never reached fails at
// once: a wrong address or a stopped server does not come back by itself.
// Nothing was sent on a connection that was never made, so retrying is
// always safe.
func (s *Store) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	start := time.Now()
	backoff := acquireBackoffMin
	for attempt := 1; ; attempt++ {
		c, err := s.pool.Acquire(ctx)
		if err == nil {
			s.reached.Store(true)
			if s.waiting.CompareAndSwap(true, false) && s.log != nil {
				s.log.Info("the database answers again", "address", s.addr)
			}
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		why, saturated := refusal(err)
		switch {
		case why == "" && unreachable(err) && !s.reached.Load():
			return nil, fmt.Errorf("cannot reach PostgreSQL at %s: is PostgreSQL running, and are the host and port of "+
				"the store url right? %w", s.addr, err)
		case why == "" && unreachable(err):
			why = "the server cannot be reached (restarting?)"
		case why == "":
			return nil, err
		}
		sleep := backoff/2 + rand.N(backoff/2)
		if waited := time.Since(start); waited+sleep > s.acquireWait {
			advice := "is PostgreSQL running?"
			if saturated {
				advice = "raise the server's max_connections, lower pool_max_conns in the url, or put PgBouncer " +
					"(transaction pooling) in front of the server"
			}
			return nil, fmt.Errorf("get a database connection from %s: %s, still after %d attempts in %v; %s: %w",
				s.addr, why, attempt, waited.Round(time.Millisecond), advice, err)
		}
		if s.waiting.CompareAndSwap(false, true) && s.log != nil {
			s.log.Info("waiting for the database", "address", s.addr, "why", why, "up_to", s.acquireWait)
		}
		t := time.NewTimer(sleep)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		backoff = min(2*backoff, acquireBackoffMax)
	}
}

// Server errors that refuse a new connection for a while.
const (
	codeTooManyConnections = "53300" // too_many_connections: max_connections or a role's CONNECTION LIMIT
	codeCannotConnectNow   = "57P03" // cannot_connect_now: starting up, shutting down, recovering
)

// refusal says why err, from connecting, is a server refusing clients for
// a while, worth waiting out ("" when it is not); saturated: the server
// has no connection slot, or is not taking connections yet, so the pool
// advice applies.
func refusal(err error) (why string, saturated bool) {
	switch code, _ := pgCode(err); code {
	case codeTooManyConnections:
		return "the server has no connection slot left (SQLSTATE 53300)", true
	case codeCannotConnectNow:
		return "the server is starting up or shutting down (SQLSTATE 57P03)", true
	}
	return "", false
}

// unreachable reports whether err, from connecting, means no server
// answered at the address: the name does not resolve, or the dial failed
// (refused, no route, timed out). It looks at the error types, never the
// text.
func unreachable(err error) bool {
	if code, _ := pgCode(err); code != "" {
		return false // a server answered (one of several addresses, say)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

var (
	readWrite = pgx.TxOptions{}
	readOnly  = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
)

// pgCode returns the SQLSTATE of a server error, or "".
func pgCode(err error) (code, constraint string) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code, pgErr.ConstraintName
	}
	return "", ""
}

const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
	codeCheckViolation      = "23514"
)

// checkText reports text PostgreSQL cannot store that every backend
// accepts: invalid UTF-8 (the SQLite backend stores it; NUL, which neither
// stores, is refused before, by sessions.CheckText). Callers persisting raw
// tool output should make it valid UTF-8 first.
func checkText(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8, which PostgreSQL text requires", what)
	}
	return nil
}
