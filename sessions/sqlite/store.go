package sqlite

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
)

func init() {
	sessions.Register("sqlite", func(ctx context.Context, url string, opts *sessions.Options) (sessions.Store, error) {
		st, err := OpenWith(ctx, url, opts)
		if err != nil {
			return nil, err // never a typed nil inside the interface
		}
		return st, nil
	})
}

// ApplicationID is stored in the SQLite header (PRAGMA application_id) of
// every OpenProgram database: "OPRG".
const ApplicationID = 0x4f505247

// DefaultFileName is the database file inside the state directory.
const DefaultFileName = "openprogram.db"

// BusyTimeout is how long a write waits for another connection or process
// holding the write lock before failing with SQLITE_BUSY.
const BusyTimeout = 10 * time.Second

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is a [sessions.Store] on an SQLite database file. It is safe for
// concurrent use; several processes may open the same file.
type Store struct {
	path    string
	release func()  // drops this Store from files
	w       *sql.DB // one connection, BEGIN IMMEDIATE: writes queue here, not in SQLite's busy loop
	r       *sql.DB // read-only connections

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt // hot read queries on r, prepared on first use; see readStmt

	auditKey []byte // nil: audit appends and verification fail closed

	taskRules // the sessions.TaskStore methods but PurgeExpiredTasks, over taskSQL
	auditLog  // AppendAudit, VerifyAudit, CheckAuditAnchor, over auditTx
}

var _ sessions.Store = (*Store)(nil)

// Open opens (creating it owner-only, if missing: mode 0600 on Unix, a DACL
// for the user and SYSTEM on Windows) the SQLite database named
// by dsn and runs pending migrations. dsn is a file path or a URL:
// "sqlite:/abs/file.db", "sqlite:relative.db", "sqlite:///abs/file.db",
// "sqlite://relative.db".
//
// A file that is not an OpenProgram database (not SQLite, corrupt, or
// another application's) fails with [sessions.ErrNotDatabase] and is left
// byte for byte as it was. A database migrated by a newer OpenProgram fails
// with [sessions.ErrSchemaTooNew].
//
// The store has no audit key; use [OpenWith] to append or verify audit
// records.
func Open(ctx context.Context, dsn string) (*Store, error) {
	return OpenWith(ctx, dsn, nil)
}

// OpenWith is [Open] with options (nil: the zero [sessions.Options]). With
// an audit key it keys the audit log as [sessions.Options] describes, in
// the write transaction that follows the migrations.
func OpenWith(ctx context.Context, dsn string, opts *sessions.Options) (*Store, error) {
	opts, err := auditchain.OpenOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store: %w", err)
	}
	path, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if opts.NoMigrate {
		if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open sqlite store %s: the file does not exist: %w", path, sessions.ErrNoStore)
		}
	} else if err := createIfMissing(ctx, path, opts); err != nil {
		return nil, err
	}
	empty, mayRace, release, err := acquireFile(path)
	if err != nil {
		return nil, err
	}
	if empty && opts.NoMigrate {
		release()
		return nil, fmt.Errorf("open sqlite store %s: the file is empty: %w", path, sessions.ErrNoStore)
	}
	// An empty file created by someone else is initialised in place; when
	// several processes do that at once SQLite may report an I/O error while
	// they race to switch it to WAL: try again.
	for attempt := 1; ; attempt++ {
		s, err := open(ctx, path, opts)
		if err == nil {
			s.release = release
			return s, nil
		}
		if attempt == 10 || !(mayRace && transient(err)) {
			release()
			return nil, err
		}
		select {
		case <-ctx.Done():
			release()
			return nil, fmt.Errorf("open sqlite store %s: %w", path, ctx.Err())
		case <-time.After(time.Duration(attempt) * 20 * time.Millisecond):
		}
	}
}

// files are the database files this process has open, with how many
// Stores use each. checkFile reads a file's header with os.Open, and
// closing that descriptor would drop the POSIX locks SQLite holds on the
// file for this process; so a file already open here is not read again
// (it was checked when first opened), and filesMu orders checks before
// SQLite connections.
var (
	filesMu sync.Mutex
	files   []*openFile
)

type openFile struct {
	fi   os.FileInfo
	refs int
	// empty: the file was empty when this process first checked it, so
	// every handle of it may race another process initialising it.
	empty bool
}

// acquireFile checks path unless this process already has it open, and
// counts one more user of it. release undoes it.
// empty is this check's finding (false when the file was already open
// here); mayRace is whether the file was empty when this process first
// checked it, so that opening it may still race another process
// initialising it.
func acquireFile(path string) (empty, mayRace bool, release func(), err error) {
	filesMu.Lock()
	defer filesMu.Unlock()
	fi, err := os.Stat(path)
	if err != nil {
		return false, false, nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	var of *openFile
	for _, f := range files {
		if os.SameFile(f.fi, fi) {
			of = f
		}
	}
	if of == nil {
		if empty, err = checkFile(path); err != nil {
			return false, false, nil, err
		}
		of = &openFile{fi: fi, empty: empty}
		files = append(files, of)
	}
	of.refs++
	var once sync.Once
	return empty, of.empty, func() {
		once.Do(func() {
			filesMu.Lock()
			defer filesMu.Unlock()
			if of.refs--; of.refs == 0 {
				files = slices.DeleteFunc(files, func(f *openFile) bool { return f == of })
			}
		})
	}, nil
}

func open(ctx context.Context, path string, opts *sessions.Options) (*Store, error) {
	s := &Store{path: path, auditKey: bytes.Clone(opts.AuditKey)}
	s.taskRules = newTaskRules(s)
	s.auditLog = newAuditLog(s, opts)
	var err error
	if s.w, err = sql.Open("sqlite", connString(path, false)); err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if _, err := s.migrate(ctx, !opts.NoMigrate); err != nil {
		s.w.Close()
		return nil, err
	}
	if s.auditKey != nil && opts.AdoptUnkeyedLog && !opts.NoMigrate {
		if err := s.keyAudit(ctx); err != nil {
			s.w.Close()
			return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
		}
	}
	if s.r, err = sql.Open("sqlite", connString(path, true)); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	s.r.SetMaxOpenConns(4)
	s.r.SetMaxIdleConns(4)
	return s, nil
}

func transient(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR:
		return true
	}
	return false
}

// createIfMissing creates a new database atomically: it is built and
// migrated under a temporary name in the same directory, then hard-linked
// into place, so no process ever sees a half-initialised file and
// processes starting together on a new path do not race. The loser of the
// link race simply uses the winner's file.
func createIfMissing(ctx context.Context, path string, opts *sessions.Options) error {
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // exists (or unreadable: checkFile reports it)
	}
	// Owner-only from its creation (mode 0600 on Unix, a DACL for the user
	// and SYSTEM on Windows): the store holds every conversation.
	tmpPath := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".init-"+rand.Text()[:16])
	tmp, err := privatefile.Create(tmpPath)
	if err != nil {
		return fmt.Errorf("create sqlite store %s: %w (does the state directory exist?)", path, err)
	}
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			os.Remove(tmpPath + suffix)
		}
	}()
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("create sqlite store %s: %w", path, err)
	}
	s, err := open(ctx, tmpPath, opts)
	if err != nil {
		return fmt.Errorf("create sqlite store %s: %w", path, err)
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("create sqlite store %s: %w", path, err)
	}
	err = os.Link(tmpPath, path)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	// No hard links on this file system: create an empty file in place;
	// Open initialises it (and retries if another process does too).
	f, err := privatefile.Create(path)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create sqlite store %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create sqlite store %s: %w", path, err)
	}
	return nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// readStmt returns query prepared on the read-only pool. database/sql
// prepares it once per connection and keeps it, so the hot read paths skip
// SQLite's parse and plan on every call. Statements are prepared on first
// use, not at Open: opening a read connection is not on the startup path.
func (s *Store) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st := s.stmts[query]; st != nil {
		return st, nil
	}
	st, err := s.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = make(map[string]*sql.Stmt)
	}
	s.stmts[query] = st
	return st, nil
}

// Close closes the store's connections.
func (s *Store) Close() error {
	var errs []error
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	if s.release != nil {
		s.release()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close sqlite store %s: %w", s.path, err)
	}
	return nil
}

// parseDSN turns the accepted DSN forms into a file path.
func parseDSN(dsn string) (string, error) {
	path := dsn
	if len(dsn) >= len("sqlite:") && strings.EqualFold(dsn[:len("sqlite:")], "sqlite:") {
		path = dsn[len("sqlite:"):]
		if rest, ok := strings.CutPrefix(path, "//"); ok {
			path = rest
		}
	}
	switch {
	case path == "":
		return "", fmt.Errorf("open sqlite store: empty path in %q; use sqlite:<path to openprogram.db>", dsn)
	case path == ":memory:" || strings.HasPrefix(path, "file:") || strings.Contains(path, "mode=memory"):
		return "", fmt.Errorf("open sqlite store: %q is not a file path; in-memory and URI databases are not supported (tests can use a file under t.TempDir())", dsn)
	}
	return filepath.Clean(path), nil
}

// connString builds the modernc.org/sqlite DSN. The pragmas apply to every
// pooled connection. synchronous=FULL: a commit survives power loss, not
// only a process crash (the store must never lose a turn).
func connString(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(BusyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Set("_txlock", "immediate")
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: path, RawQuery: q.Encode()}
	if !filepath.IsAbs(path) {
		u = url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath(), RawQuery: q.Encode()}
	}
	return u.String()
}

// checkFile refuses an existing file that is not an OpenProgram database
// before SQLite may write to it (opening in WAL mode would). It reports
// whether the file is empty (ours to initialise). The caller holds filesMu
// and no Store of this process has the file open (see files).
func checkFile(path string) (empty bool, err error) {
	// Another process may be initialising or writing the file: what it
	// shows can be torn between two reads (the header read here still says
	// plain SQLite while the schema read next already holds its tables), so
	// a file that looks unreadable or foreign is looked at again, header
	// first, before it is refused.
	for attempt := 1; ; attempt++ {
		empty, err = checkFileOnce(path)
		if err == nil || attempt == 4 || !errors.Is(err, errUnsettled) {
			return empty, err
		}
		time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
	}
}

// checkFileOnce is one look of checkFile.
func checkFileOnce(path string) (empty bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return false, fmt.Errorf("open sqlite store %s: %w", path, err)
	case st.IsDir():
		return false, fmt.Errorf("open sqlite store %s: is a directory: %w", path, sessions.ErrNotDatabase)
	case st.Size() == 0:
		return true, nil
	}
	var hdr [100]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil || !validHeader(hdr) {
		return false, notSQLite(path)
	}
	switch id := binary.BigEndian.Uint32(hdr[68:72]); id {
	case ApplicationID:
		return false, nil
	case 0:
		// Plain SQLite: ours only if it holds no tables yet.
		return false, checkNoTables(path)
	default:
		return false, fmt.Errorf("open sqlite store %s: the SQLite file belongs to another application (application_id %#x): %w; move it away or choose another store.url",
			path, id, sessions.ErrNotDatabase)
	}
}

// validHeader checks the fixed fields of an SQLite database header.
func validHeader(h [100]byte) bool {
	pageSize := int(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	return string(h[:16]) == "SQLite format 3\x00" &&
		pageSize >= 512 && pageSize&(pageSize-1) == 0 &&
		h[21] == 64 && h[22] == 32 && h[23] == 32 // payload fractions
}

// errUnsettled marks what checkFile looks at again: a file that reads
// as corrupt or as holding another application's tables may be one another
// process is writing.
var errUnsettled = errors.New("unsettled")

// unsettled marks err with errUnsettled without changing its text.
type unsettled struct{ error }

func (u unsettled) Unwrap() []error { return []error{u.error, errUnsettled} }

func notSQLite(path string) error {
	return fmt.Errorf("open sqlite store %s: the file is not an SQLite database (corrupt, or something else): %w; move it away or choose another store.url",
		path, sessions.ErrNotDatabase)
}

// checkNoTables reads the schema of a plain SQLite file read-only and
// immutable: no lock, no journal or WAL file, nothing written.
func checkNoTables(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	u := url.URL{Scheme: "file", OmitHost: true, Path: abs, RawQuery: "mode=ro&immutable=1"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
		return inspectError(path, err)
	}
	if n > 0 {
		return unsettled{fmt.Errorf("open sqlite store %s: the SQLite file holds another application's tables: %w; move it away or choose another store.url",
			path, sessions.ErrNotDatabase)}
	}
	return nil
}

func inspectError(path string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			return notSQLite(path)
		case sqlite3.SQLITE_CORRUPT:
			return unsettled{fmt.Errorf("open sqlite store %s: the database file is corrupt (%v): %w; restore it from a backup or move it away",
				path, err, sessions.ErrNotDatabase)}
		}
	}
	return fmt.Errorf("open sqlite store %s: %w", path, err)
}

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration file %q is not named NNNN_name.sql", e.Name())
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migrations are not numbered 1..n: found %d at position %d", m.version, i+1)
		}
	}
	return out, nil
}

// auditWritersVersion is the migration that starts writer chains; on a
// store that had records its Go half is [auditchain.Log.SwitchTx].
const auditWritersVersion = 6

// migrationSteps are the Go halves of migrations, run right after the
// version's SQL in the same transaction: work SQL cannot do, such as
// writing the search postings (package fulltext) of the rows stored.
var migrationSteps = map[int]func(ctx context.Context, tx *sql.Tx) error{
	3: indexMemory,
}

// LatestSchemaVersion is the schema version this code writes.
func LatestSchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		panic(err) // embedded files: a build defect, caught by every test
	}
	return len(ms)
}

// migrate brings the schema to the latest version. BEGIN IMMEDIATE takes
// the database write lock, so processes starting together migrate once. A
// schema it creates is keyed (keyAuditTx) in the same transaction when the
// store has an audit key. It returns the version it found. Without apply
// it writes nothing: no tables yet is [sessions.ErrNoStore], an older
// schema [sessions.ErrMigrationsPending]; and it reads in a deferred
// transaction that takes no write lock, so it neither waits for nor fails
// beside another connection's write transaction (WAL readers see the last
// commit).
func (s *Store) migrate(ctx context.Context, apply bool) (int, error) {
	ms, err := migrations()
	if err != nil {
		return -1, fmt.Errorf("open sqlite store %s: %w", s.path, err)
	}
	tx, err := s.w.BeginTx(ctx, &sql.TxOptions{ReadOnly: !apply})
	if err != nil {
		return -1, s.openError(err)
	}
	defer tx.Rollback()
	var appID int64
	if err := tx.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID); err != nil {
		return -1, s.openError(err)
	}
	var tables []string
	rows, err := tx.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		return -1, s.openError(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return -1, s.openError(err)
		}
		tables = append(tables, n)
	}
	if err := rows.Close(); err != nil {
		return -1, s.openError(err)
	}
	if appID != ApplicationID && len(tables) > 0 {
		return -1, fmt.Errorf("open sqlite store %s: the SQLite file holds another application's tables: %w", s.path, sessions.ErrNotDatabase)
	}
	current := 0
	if len(tables) > 0 {
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
			return -1, s.openError(fmt.Errorf("read schema version: %w", err))
		}
	}
	if current > len(ms) {
		return -1, fmt.Errorf("open sqlite store %s: schema version %d, this openprogram knows up to %d: %w",
			s.path, current, len(ms), sessions.ErrSchemaTooNew)
	}
	if current == len(ms) {
		return current, nil // rollback: nothing written
	}
	if !apply {
		if current == 0 {
			return -1, fmt.Errorf("open sqlite store %s: the database holds no tables yet: %w", s.path, sessions.ErrNoStore)
		}
		return -1, fmt.Errorf("open sqlite store %s: schema version %d, this openprogram migrates it to %d when it opens it to write: %w",
			s.path, current, len(ms), sessions.ErrMigrationsPending)
	}
	if current == 0 {
		stmts := []string{
			fmt.Sprintf(`PRAGMA application_id = %d`, ApplicationID),
			`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
		}
		for _, q := range stmts {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return -1, s.openError(err)
			}
		}
	}
	for _, m := range ms[current:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return -1, fmt.Errorf("open sqlite store %s: migration %04d_%s: %w", s.path, m.version, m.name, err)
		}
		if step := migrationSteps[m.version]; step != nil {
			if err := step(ctx, tx); err != nil {
				return -1, fmt.Errorf("open sqlite store %s: migration %04d_%s: %w", s.path, m.version, m.name, err)
			}
		}
		if m.version == auditWritersVersion && current > 0 {
			if err := s.auditLog.SwitchTx(ctx, auditTx{tx}); err != nil {
				return -1, fmt.Errorf("open sqlite store %s: migration %04d_%s: %w", s.path, m.version, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.version, m.name, time.Now().UnixMicro()); err != nil {
			return -1, s.openError(err)
		}
	}
	if current == 0 && s.auditKey != nil {
		if err := s.keyAuditTx(ctx, tx); err != nil {
			return -1, fmt.Errorf("open sqlite store %s: %w", s.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return -1, s.openError(err)
	}
	return current, nil
}

func (s *Store) openError(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("open sqlite store %s: the database file is corrupt (%v): %w; restore it from a backup or move it away",
				s.path, err, sessions.ErrNotDatabase)
		}
	}
	return fmt.Errorf("open sqlite store %s: %w", s.path, err)
}
