// Package postgres is the PostgreSQL backend of [sessions.Store], built on
// pgx's connection pool (github.com/jackc/pgx/v5/pgxpool). Several
// OpenProgram processes, on one machine or many, share one database:
// sessions, memory, audit and turn leases live there, so they need no
// coordinator of their own.
//
// Importing the package registers the "postgres" and "postgresql" URL
// schemes with [sessions.Open]:
//
//	import (
//		"github.com/openprogram/openprogram/sessions"
//		_ "github.com/openprogram/openprogram/sessions/postgres"
//	)
//
//	st, err := sessions.Open(ctx, "postgres://openprogram@db.internal:5432/openprogram?search_path=openprogram")
//	if err != nil {
//		return err // sessions.ErrSchemaTooNew: upgrade openprogram
//	}
//	defer st.Close()
//
// [Open] returns the concrete [*Store] for callers that want it.
//
// # Schema and migrations
//
// PostgreSQL 12 or newer is required. The tables live in the first schema of the connection's search_path
// (public unless the URL sets search_path). Open applies the embedded,
// numbered migrations (migrations/NNNN_name.sql) in one transaction under
// an advisory lock keyed by the schema name, so processes starting together
// migrate once, and records the version in openprogram_schema_migrations.
// A schema written by a newer version is refused with
// [sessions.ErrSchemaTooNew]; a schema holding tables of the same names
// that OpenProgram did not create is refused with [sessions.ErrNotDatabase].
//
// # Transactions and concurrency
//
// Every multi-statement write is one transaction: a turn's messages and its
// head move commit together, so a crash (even SIGKILL of the process) leaves
// either the old head or the new one. The turn lease is a row of
// turn_leases taken by a single INSERT ... ON CONFLICT DO UPDATE whose WHERE
// clause only lets the same owner, or anyone after expiry, through; expiry
// is judged by the database clock. Memory writes lock the one memory_state
// row, which serialises them across processes and keeps revisions linear.
// An audit append of a writer chain is one statement that touches only that
// writer's head row (appends of one process that wait are group-committed
// into the next statement); only the shared chain of a store without a
// signing key locks the one audit_head row.
//
// # Reads
//
// [Store.ListSessions] walks a partial index on (updated_at DESC, id DESC)
// and stops after the limit, so its cost does not depend on the number of
// sessions. [Store.Branch] reads a session's messages in one index scan and
// follows the parent links in Go, which for a 10,000-message branch is an
// order of magnitude faster than a recursive CTE.
//
// # Search
//
// Memory search is the same for every backend (words, scores, order; see
// the sessions README): the store keeps each source's and trusted page's
// postings in memory_terms, whose primary key (layer, term, rank, id) a
// search reads best first in batches and stops early, so a word in every
// source costs as little as a rare one. Appends and promotions write the
// postings in their transaction; migration 3 writes them for what was
// stored and builds the key in one sorted pass. Grep narrows documents with
// strpos in the database and picks lines in Go.
//
// # Many processes
//
// Every process has its own pool, so the defaults are small: at most
// [DefaultMaxConns] connections, no minimum, idle ones closed after
// [DefaultMaxConnIdleTime] (checked every [DefaultHealthCheckPeriod]), so an
// idle process holds no connection and a finished burst frees its slots for
// other processes. pgx's own URL parameters (pool_max_conns,
// pool_max_conn_idle_time, pool_health_check_period, default_query_exec_mode)
// override them. A server that refuses a new connection because it is full
// (SQLSTATE 53300) or starting or stopping (57P03) is waited out with
// jittered backoff for at most [DefaultAcquireWait]; so is one that cannot
// be reached once the store has reached it (a restart). One the store never
// reached fails at once, naming its host and port. Statements run
// in [DefaultQueryExecMode] (unnamed prepared statements) and no session
// state is kept on a connection, so PgBouncer in transaction pooling works
// with a plain URL. [Store.Connections] reports the server's limit, its use
// and whether a pooler sits in between.
//
// # Lost connections
//
// pgxpool replaces connections that die, for example when the server
// restarts or an administrator runs pg_terminate_backend. A call that finds
// its connection dead resets the pool (its other idle connections are
// likely dead too) and runs once more on a fresh connection when that is
// safe: reads, the idempotent lease statements, and transactions that had
// not sent COMMIT yet. A COMMIT lost with its connection is ambiguous and is
// reported, never retried.
package postgres
