package host

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
	// The two store backends register their URL schemes.
	_ "github.com/openprogram/openprogram/sessions/postgres"
	_ "github.com/openprogram/openprogram/sessions/sqlite"
)

// EnvHome is the environment variable that selects the state directory;
// messages name it.
const EnvHome = "OPENPROGRAM_HOME"

// EnsureStateDir creates dir (and missing parents) with mode 0700 and
// refuses a state directory that is a symlink, not a directory, or open to
// group or others.
func EnsureStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create state directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("inspect state directory %s: %w", dir, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("state directory %s is not a plain directory; point %s at a real directory", dir, EnvHome)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("state directory %s has mode %04o; run: chmod 700 %s", dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// OpenStore opens the store at url with the audit key of stateDir
// (tokenauth.KeyFileName). With create, the state directory of an embedded
// SQLite store is created, a missing key is created (with the token file's
// no-replace procedure) and the store may adopt an unkeyed log: re-key a
// log written before keyed audit, or key an empty one. Only a key created
// just now may adopt: a log that is unkeyed while its key exists was reset
// behind openprogram's back. Without create, a missing key opens the store
// without one, so audit commands fail closed. The caller closes the store.
func OpenStore(ctx context.Context, stateDir, url string, create bool) (sessions.Store, error) {
	if create && strings.HasPrefix(url, "sqlite:") {
		if err := EnsureStateDir(stateDir); err != nil {
			return nil, err
		}
	}
	opts, err := auditKeyOptions(tokenauth.KeyPath(stateDir), create)
	if err != nil {
		return nil, err
	}
	st, err := sessions.OpenWith(ctx, url, opts)
	clear(opts.AuditKey) // the stores keep their own copy
	if err != nil {
		return nil, fmt.Errorf("open the session store: %w", err)
	}
	return st, nil
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
