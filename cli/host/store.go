package host

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"

	// The two store backends register their URL schemes.
	_ "github.com/openprogram/openprogram/sessions/postgres"
	_ "github.com/openprogram/openprogram/sessions/sqlite"
)

// EnvHome is the environment variable that selects the state directory;
// messages name it.
const EnvHome = "OPENPROGRAM_HOME"

// EnsureStateDir creates dir (and missing parents) owner-only (mode 0700;
// on Windows a DACL for the user and SYSTEM) and refuses a state directory
// that is a symlink, not a directory, or open to others.
func EnsureStateDir(dir string) error {
	if err := privatefile.MkdirAll(dir); err != nil {
		return fmt.Errorf("create state directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("inspect state directory %s: %w", dir, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("state directory %s is not a plain directory; point %s at a real directory", dir, EnvHome)
	}
	return checkStateDirPrivate(dir, fi)
}

// StoreOptions say what opening a store may change. The zero value opens
// an existing store as it is, migrating it, with the audit key if it exists.
type StoreOptions struct {
	// Create is for a front end that writes (mcp serve, chat, prompt, mcp
	// token rotate). It holds the store to the audit anchor of the state
	// directory (tokenauth.AnchorFileName): a log that does not extend it
	// is refused, and the anchor follows the sealed head while the store is
	// open and when it closes. It also makes what a first run needs: the
	// state directory of an
	// embedded SQLite store, and a missing audit key (with the token file's
	// no-replace procedure). The store may then adopt an unkeyed log:
	// re-key a log written before keyed audit, or key an empty one. Only a
	// key created just now may adopt: a log that is unkeyed while its key
	// exists was reset behind openprogram's back.
	Create bool
	// Inspect changes nothing (doctor, tools list): no state directory,
	// database, table or audit key is created and no migration runs. A
	// store that does not exist yet is an error wrapping
	// sessions.ErrNoStore; one an older version wrote,
	// sessions.ErrMigrationsPending. It overrides Create.
	Inspect bool
	// Unpinned opens the store without this host's pins of audit writer
	// keys (audit reanchor: a restored log may predate keys pinned since).
	Unpinned bool
	// Logger hears what the store says while it opens (a wait for the
	// database). Nil discards.
	Logger *slog.Logger
}

// OpenStore opens the store at url with the audit key of stateDir
// (tokenauth.KeyFileName), the one place a store is opened. Without a key
// file (and without Create), the store opens without a key, so audit
// commands fail closed. The caller closes the store.
func OpenStore(ctx context.Context, stateDir, url string, o *StoreOptions) (sessions.Store, error) {
	if o == nil {
		o = &StoreOptions{}
	}
	create := o.Create && !o.Inspect
	if create && strings.HasPrefix(url, "sqlite:") {
		if err := EnsureStateDir(stateDir); err != nil {
			return nil, err
		}
	}
	opts, err := auditKeyOptions(tokenauth.KeyPath(stateDir), create)
	if err != nil {
		return nil, err
	}
	if err := auditSignerOptions(stateDir, create, opts); err != nil {
		return nil, err
	}
	if o.Unpinned {
		opts.AuditPins = nil
	}
	opts.Logger = o.Logger
	opts.NoMigrate = o.Inspect
	st, err := sessions.OpenWith(ctx, url, opts)
	clear(opts.AuditKey) // the stores keep their own copy
	if err != nil {
		return nil, fmt.Errorf("open the session store: %w", err)
	}
	if !create {
		return st, nil
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	held, err := holdAnchor(ctx, st, tokenauth.AnchorPath(stateDir), log)
	if err != nil {
		st.Close()
		return nil, err
	}
	return held, nil
}

// auditSignerOptions adds this host's audit signing key (created, with
// create, and pinned), the pins and, with create, the anchor to opts: the
// store then appends to writer chains of its own, signed with the key.
// Without a signing key (and without create) the store can still verify.
func auditSignerOptions(stateDir string, create bool, opts *sessions.Options) error {
	path := tokenauth.SigningKeyPath(stateDir)
	var key []byte
	var err error
	if create {
		key, _, err = tokenauth.LoadOrCreateSigningKey(path)
	} else if key, err = tokenauth.ReadSigningKey(path); errors.Is(err, fs.ErrNotExist) {
		key, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("load the audit signing key: %w", err)
	}
	if key != nil {
		opts.AuditSigner, opts.AuditSignerLabel = key, signerLabel()
	}
	if create && key != nil {
		pub := opts.AuditSigner.Public().(ed25519.PublicKey)
		own := sessions.AuditKey{ID: sessions.AuditKeyID(pub), PublicKey: sessions.EncodeAuditKey(pub), Label: opts.AuditSignerLabel}
		if _, err := AddPins(tokenauth.PinsPath(stateDir), []sessions.AuditKey{own}); err != nil {
			return err
		}
		// An unreadable anchor is refused by the anchor check after the
		// open; the chain then starts after none.
		opts.AuditAnchor, _ = ReadAnchor(tokenauth.AnchorPath(stateDir))
	}
	pins, err := ReadPins(tokenauth.PinsPath(stateDir))
	if err != nil {
		return err
	}
	opts.AuditPins = PinnedKeys(pins)
	return nil
}

// auditKeyOptions reads (with create: reads or creates) the audit key at
// path into store options.
func auditKeyOptions(path string, create bool) (*sessions.Options, error) {
	if create {
		key, created, err := tokenauth.LoadOrCreateKey(path)
		if err != nil {
			return nil, fmt.Errorf("load the audit key: %w", err)
		}
		return &sessions.Options{AuditKey: key, AdoptUnkeyedLog: created}, nil
	}
	key, err := tokenauth.ReadKey(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &sessions.Options{}, nil
	case err != nil:
		return nil, fmt.Errorf("load the audit key: %w", err)
	}
	return &sessions.Options{AuditKey: key}, nil
}
