// Package sqlite is the embedded [sessions.Store] backend: one SQLite file
// (modernc.org/sqlite, pure Go) in WAL mode with a busy timeout, foreign
// keys on and synchronous=FULL. Several processes may open the same file;
// writes take the lock up front (BEGIN IMMEDIATE) and queue.
//
// Importing the package registers the "sqlite" scheme with [sessions.Open]:
//
//	import _ "github.com/openprogram/openprogram/sessions/sqlite"
//
//	st, err := sessions.Open(ctx, "sqlite:"+filepath.Join(stateDir, sqlite.DefaultFileName))
//
// or call [Open] directly for the concrete [*Store].
package sqlite
