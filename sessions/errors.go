package sessions

import "errors"

// Sentinel errors. Backends wrap them with context; test with errors.Is.
var (
	// ErrNotFound: the session, message, source or memory path does not exist.
	ErrNotFound = errors.New("sessions: not found")
	// ErrExists: a session with that ID already exists.
	ErrExists = errors.New("sessions: already exists")
	// ErrBusy: another live owner holds the session's turn lease.
	ErrBusy = errors.New("sessions: session busy with another turn")
	// ErrLeaseLost: the caller no longer holds the turn lease it renews.
	ErrLeaseLost = errors.New("sessions: turn lease lost")
	// ErrConflict: the memory path changed since the caller's base revision.
	ErrConflict = errors.New("sessions: memory revision conflict")
	// ErrInvalidText: a text to write holds U+0000, which no backend stores
	// (PostgreSQL text cannot). Nothing was written; see [CheckText].
	ErrInvalidText = errors.New("sessions: text contains U+0000")
	// ErrSchemaTooNew: the database was migrated by a newer OpenProgram;
	// upgrade openprogram to use it.
	ErrSchemaTooNew = errors.New("sessions: database schema is newer than this openprogram, upgrade openprogram")
	// ErrNoStore: a store opened with [Options.NoMigrate] does not exist
	// yet (no database file, or an empty schema). Nothing was created.
	ErrNoStore = errors.New("sessions: no store yet")
	// ErrMigrationsPending: a store opened with [Options.NoMigrate] has an
	// older schema than this version; a plain open migrates it.
	ErrMigrationsPending = errors.New("sessions: schema migrations pending")
	// ErrNotDatabase: the file is not an OpenProgram database (corrupt, not
	// SQLite, or another application's). The file is left untouched.
	ErrNotDatabase = errors.New("sessions: not an OpenProgram database")
	// ErrAuditKey: the store cannot append to or verify the audit log with
	// the key it was opened with: no key, another key than the log's, or a
	// log that is not keyed (see [Options.AuditKey]).
	ErrAuditKey = errors.New("sessions: audit key missing or wrong")
	// ErrAuditBroken: AppendAudit refused to extend an audit chain whose
	// head fails its seal (the log was tampered with), so that the new
	// record does not hide it.
	ErrAuditBroken = errors.New("sessions: audit log tampered with")
	// ErrAuditAnchor: the audit log no longer holds a record the caller
	// anchored earlier (see Store.CheckAuditAnchor): it was emptied,
	// replaced by another log, or cut back.
	ErrAuditAnchor = errors.New("sessions: audit log does not extend its anchor")
)
