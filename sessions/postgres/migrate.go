package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/sessions"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema step, migrations/NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. Versions
// start at 1 and have no gaps; a broken embed is a build mistake, so it
// panics.
func migrations() []migration {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	var out []migration
	for _, n := range names {
		base := path.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic(fmt.Sprintf("postgres: migration file %s is not named NNNN_name.sql", n))
		}
		body, err := migrationFiles.ReadFile(n)
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: strings.TrimSuffix(base, ".sql"), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			panic(fmt.Sprintf("postgres: migration %s out of sequence, want version %d", m.name, i+1))
		}
	}
	return out
}

// allMigrations are the embedded migrations, parsed once.
var allMigrations = migrations()

// migrationSteps are the Go halves of migrations, run right after the
// version's SQL in the same transaction: work SQL cannot do, such as
// writing the search postings (package fulltext) of the rows stored.
var migrationSteps = map[int]func(ctx context.Context, tx pgx.Tx) error{
	3: indexMemory,
}

// auditWritersVersion is the migration that starts writer chains; on a
// store that had records its Go half is [auditchain.Log.SwitchTx].
const auditWritersVersion = 6

// minServerVersion is PostgreSQL 12 (server_version_num), the first with
// generated columns.
const minServerVersion = 120000

// migrationTable records the applied schema versions. Its name is specific
// enough not to clash with another tool's migration table in a shared
// schema.
const migrationTable = "openprogram_schema_migrations"

// ourTables are the tables migrations create; finding one of them in a
// schema without migrationTable means the schema belongs to someone else.
var ourTables = []string{"sessions", "messages", "turn_leases", "memory_state", "memory_paths",
	"memory_sources", "memory_trusted", "memory_terms", "audit_records", "audit_head", "tasks", "session_allowances", "audit_keys", "audit_writers"}

// migrate brings the schema up to the newest embedded migration in one
// transaction, under a transaction-scoped advisory lock keyed by the
// schema's name: processes starting together queue on the lock and the
// later ones find nothing left to do, while stores in different schemas do
// not wait for each other. PostgreSQL DDL is transactional, so a failed or
// killed migration leaves the previous version intact. A schema it
// creates is keyed (keyAuditTx) in the same transaction when the store has
// an audit key.
//
// Without apply it only looks, in a read-only transaction: an empty schema
// is [sessions.ErrNoStore] and an older one [sessions.ErrMigrationsPending].
func (s *Store) migrate(ctx context.Context, apply bool) error {
	all := allMigrations
	txOpts := readWrite
	if !apply {
		txOpts = readOnly
	}
	return s.tx(ctx, txOpts, func(tx pgx.Tx) error {
		var version int
		if err := tx.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
			return fmt.Errorf("migrate: read server version: %w", err)
		}
		if version < minServerVersion {
			return fmt.Errorf("PostgreSQL server version %d.%d is too old: the store needs PostgreSQL 12 or newer",
				version/10000, version%10000)
		}
		var schema *string
		if err := tx.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
			return fmt.Errorf("migrate: read current schema: %w", err)
		}
		if schema == nil {
			if !apply {
				return fmt.Errorf("no schema of the search_path exists: %w", sessions.ErrNoStore)
			}
			return fmt.Errorf("migrate: no schema of the search_path exists; create it or fix search_path in the url")
		}
		if apply {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
				"openprogram.sessions.migrate:"+*schema); err != nil {
				return fmt.Errorf("migrate: take the migration lock: %w", err)
			}
		}
		var hasTable bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = $2)`,
			*schema, migrationTable).Scan(&hasTable); err != nil {
			return fmt.Errorf("migrate: look for %s: %w", migrationTable, err)
		}
		current := 0
		if hasTable {
			if err := tx.QueryRow(ctx, "SELECT COALESCE(max(version), 0) FROM "+migrationTable).Scan(&current); err != nil {
				return fmt.Errorf("migrate: read schema version: %w", err)
			}
		} else {
			var foreign []string
			if err := tx.QueryRow(ctx, `SELECT COALESCE(array_agg(tablename ORDER BY tablename), '{}') FROM pg_tables
				WHERE schemaname = $1 AND tablename = ANY($2)`, *schema, ourTables).Scan(&foreign); err != nil {
				return fmt.Errorf("migrate: inspect schema %q: %w", *schema, err)
			}
			if len(foreign) > 0 {
				return fmt.Errorf("schema %q has tables %s but no %s; use an empty schema (set search_path in the url): %w",
					*schema, strings.Join(foreign, ", "), migrationTable, sessions.ErrNotDatabase)
			}
			if !apply {
				return fmt.Errorf("schema %q is empty: %w", *schema, sessions.ErrNoStore)
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE `+migrationTable+` (
				version    integer PRIMARY KEY,
				name       text NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
				return fmt.Errorf("migrate: create %s: %w", migrationTable, err)
			}
		}
		if current > len(all) {
			return fmt.Errorf("schema %q is at version %d, this openprogram knows up to %d: %w",
				*schema, current, len(all), sessions.ErrSchemaTooNew)
		}
		if !apply {
			if current < len(all) {
				return fmt.Errorf("schema %q is at version %d, this openprogram migrates it to %d when it opens it to write: %w",
					*schema, current, len(all), sessions.ErrMigrationsPending)
			}
			return nil
		}
		for _, m := range all[current:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migrate: apply %s: %w", m.name, err)
			}
			if step := migrationSteps[m.version]; step != nil {
				if err := step(ctx, tx); err != nil {
					return fmt.Errorf("migrate: apply %s: %w", m.name, err)
				}
			}
			if m.version == auditWritersVersion && current > 0 {
				if err := s.auditLog.SwitchTx(ctx, auditTx{tx}); err != nil {
					return fmt.Errorf("migrate: apply %s: %w", m.name, err)
				}
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+migrationTable+" (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return fmt.Errorf("migrate: record %s: %w", m.name, err)
			}
		}
		if current == 0 && s.auditKey != nil {
			return s.keyAuditTx(ctx, tx)
		}
		return nil
	})
}
