package settings

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/internal/environ"
)

// DatabaseFileName is the embedded SQLite store inside the state directory:
// the store when neither OPENPROGRAM_DATABASE_URL nor store.url names one.
const DatabaseFileName = "openprogram.db"

// Environment variables the CLI reads.
const (
	// EnvHome selects the state directory outright.
	EnvHome = host.EnvHome
	// EnvProfile selects ~/.openprogram-<profile> when EnvHome is unset.
	EnvProfile = "OPENPROGRAM_PROFILE"
	// EnvDatabaseURL overrides the store URL of config.json (store.url).
	EnvDatabaseURL = "OPENPROGRAM_DATABASE_URL"
)

// validProfile reports whether profile matches ^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$.
func validProfile(profile string) bool {
	return validName(profile, 64, isAlnum, func(c byte) bool { return isAlnum(c) || c == '_' || c == '-' })
}

// validName reports whether s is 1 to maxLen bytes long, its first byte
// accepted by first and every other byte by rest. The name checks of the
// CLI use it rather than regexps such as ^[A-Za-z0-9_.-]{1,128}$, whose
// counted repetitions compile into hundreds of instructions at every
// process start.
func validName(s string, maxLen int, first, rest func(c byte) bool) bool {
	if len(s) == 0 || len(s) > maxLen || !first(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest(s[i]) {
			return false
		}
	}
	return true
}

// isAlnum reports whether c is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Env is the process environment in os.Environ form, with os.Getenv semantics.
type Env []string

// Get returns the value of the first entry named key, as os.Getenv does on Linux.
func (e Env) Get(key string) string {
	v, _ := e.Lookup(key)
	return v
}

// Lookup is Get that also reports whether key is present.
func (e Env) Lookup(key string) (string, bool) { return environ.Lookup(e, key) }

// StateDir resolves the state directory: $OPENPROGRAM_HOME if set, else
// ~/.openprogram, or ~/.openprogram-<profile> when OPENPROGRAM_PROFILE is set.
// The home directory is $HOME on Unix and %USERPROFILE% on Windows
// ([HomeVar]).
// The result is absolute and cleaned; it is not created.
func StateDir(env Env) (string, error) {
	if home := env.Get(EnvHome); home != "" {
		abs, err := filepath.Abs(home)
		if err != nil {
			return "", fmt.Errorf("resolve %s %q: %w", EnvHome, home, err)
		}
		return abs, nil
	}
	userHome := env.Get(HomeVar)
	if userHome == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the home directory: %w; set %s", err, EnvHome)
		}
		userHome = h
	}
	name := ".openprogram"
	if profile := env.Get(EnvProfile); profile != "" {
		if !validProfile(profile) {
			return "", fmt.Errorf("%s %q is not a valid profile name: use letters, digits, '-' and '_'", EnvProfile, profile)
		}
		name += "-" + profile
	}
	return filepath.Join(userHome, name), nil
}

// IsDefaultStateDir reports whether dir is what StateDir would pick with no
// OPENPROGRAM_HOME and no profile, so client snippets can leave it out.
func IsDefaultStateDir(env Env, dir string) bool {
	bare := Env{HomeVar + "=" + env.Get(HomeVar)}
	def, err := StateDir(bare)
	return err == nil && env.Get(HomeVar) != "" && def == dir
}

// StoreKind names the kind of store url opens, for logs and reports:
// "sqlite" or "postgres".
func StoreKind(url string) string {
	if strings.HasPrefix(url, "sqlite:") {
		return "sqlite"
	}
	return "postgres"
}
