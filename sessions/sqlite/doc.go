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
//
// Memory search is the same for every backend (words, scores, order; see
// the sessions README): memory_terms, a WITHOUT ROWID table keyed by
// (layer, term, rank, id), holds each document's postings, and a search
// reads them best first and stops early. Migration 3 replaced the FTS5
// tables with it and wrote the postings of what was stored.
package sqlite
