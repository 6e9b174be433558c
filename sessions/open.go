package sessions

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
)

var (
	driversMu sync.RWMutex
	drivers   = map[string]func(ctx context.Context, url string, opts *Options) (Store, error){}
)

// Options configure a store. A nil *Options is the zero value.
type Options struct {
	// AuditKey keys the audit chain: every record carries an
	// HMAC-SHA-256 under it, over its content and the previous record's
	// MAC, and the chain head is sealed with it. It is at least 32 bytes and
	// lives outside the database (the composition root reads it from a file),
	// so write access to the database alone cannot forge a chain that
	// VerifyAudit accepts. The store keeps no copy on disk; only an id
	// derived from it (which does not reveal it) is stored, so that a wrong
	// key is reported as such.
	//
	// Nil (the zero value): AppendAudit and VerifyAudit fail with
	// [ErrAuditKey]; nothing else changes.
	AuditKey []byte

	// AuditSigner, when set, is the Ed25519 key of this store's own writer
	// chain: every record it appends goes to a chain of its own (one per
	// open store), signed with this key, and appends never wait on another
	// writer's. Its public key is recorded in the store (with
	// AuditSignerLabel) the first time, with an audit.key.added record.
	// Without it, records go to the shared chain keyed with AuditKey.
	AuditSigner ed25519.PrivateKey
	// AuditSignerLabel says whose key AuditSigner is (a host name).
	AuditSignerLabel string
	// AuditAnchor is the record this host anchored last, bound into the
	// first record of the writer chain, so that a chain of this host's
	// deleted whole is named by VerifyAudit through the chain after it.
	AuditAnchor *AuditHead
	// AuditPins are the writer public keys the verifier trusts (key id to
	// key): VerifyAudit refuses a stored key that contradicts its pin and
	// names a pinned key the log no longer holds. Keys not pinned are
	// reported (AuditKey.Pinned false) for the caller to pin.
	AuditPins map[string]ed25519.PublicKey

	// AdoptUnkeyedLog lets the store key an audit log that has no key yet:
	// a log of the first, unkeyed version is re-keyed from its first record
	// if its SHA-256 chain is intact (left as it is otherwise, and
	// VerifyAudit says why), and an empty unkeyed log is keyed. Set it only
	// with a key that was created just now: a log that is unkeyed while its
	// key already exists was reset by someone, and adopting it would hide
	// that. A database created by this very open is keyed either way.
	AdoptUnkeyedLog bool

	// NoMigrate opens an existing store without changing it, for commands
	// that only look: no database file, schema table or audit key record
	// is created and no migration runs. A store that does not exist yet (no
	// database file, an empty file or an empty schema) fails with
	// [ErrNoStore]; one whose schema is older than this version's fails
	// with [ErrMigrationsPending]. AdoptUnkeyedLog is ignored.
	NoMigrate bool

	// Logger receives what the store has to say while a call waits, such
	// as a database server that stopped answering being waited for (at
	// info). Nil: nothing is logged.
	Logger *slog.Logger
}

// Register makes a backend available to [Open] under a URL scheme
// ("sqlite", "postgres", ...), case-insensitively. Backends call it from
// init; it panics if open is nil or the scheme is registered twice. open
// receives the options as given to [OpenWith] (possibly nil).
func Register(scheme string, open func(ctx context.Context, url string, opts *Options) (Store, error)) {
	scheme = strings.ToLower(scheme)
	if open == nil {
		panic("sessions: Register open func is nil for scheme " + scheme)
	}
	driversMu.Lock()
	defer driversMu.Unlock()
	if _, dup := drivers[scheme]; dup {
		panic("sessions: Register called twice for scheme " + scheme)
	}
	drivers[scheme] = open
}

// Open opens the store named by url, choosing the backend by the URL's
// scheme: "sqlite:<path>", "sqlite://<path>", "postgres://...",
// "postgresql://...". The backend package must be imported (for example
// `import _ "github.com/openprogram/openprogram/sessions/sqlite"`).
// Open runs pending migrations (unless [Options.NoMigrate]) and fails with
// [ErrSchemaTooNew] for a database written by a newer version. The store has no audit key: use
// [OpenWith] to append or verify audit records.
func Open(ctx context.Context, url string) (Store, error) {
	return OpenWith(ctx, url, nil)
}

// OpenWith is [Open] with options; nil opts is the zero [Options].
func OpenWith(ctx context.Context, url string, opts *Options) (Store, error) {
	scheme, _, ok := strings.Cut(url, ":")
	if !ok || scheme == "" {
		return nil, fmt.Errorf("open store: url %q has no scheme; use sqlite:<path> or a postgres:// url", RedactURL(url))
	}
	scheme = strings.ToLower(scheme)
	driversMu.RLock()
	open := drivers[scheme]
	driversMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("open store: no backend registered for scheme %q (registered: %s); import its package, e.g. sessions/sqlite",
			scheme, strings.Join(Schemes(), ", "))
	}
	return open(ctx, url, opts)
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	out := make([]string, 0, len(drivers))
	for s := range drivers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
