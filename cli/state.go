package cli

import "github.com/openprogram/openprogram/cli/internal/settings"

// Env is the process environment in os.Environ form, with os.Getenv
// semantics.
type Env = settings.Env

// The state directory's files and the variables that choose it
// (cli/internal/settings has them all).
const (
	// ConfigFileName is the configuration file inside the state directory.
	ConfigFileName = settings.FileName
	// DatabaseFileName is the embedded SQLite store inside the state directory.
	DatabaseFileName = settings.DatabaseFileName
	// EnvHome selects the state directory outright.
	EnvHome = settings.EnvHome
	// EnvProfile selects ~/.openprogram-<profile> when EnvHome is unset.
	EnvProfile = settings.EnvProfile
	// EnvDatabaseURL overrides the store URL of config.json (store.url).
	EnvDatabaseURL = settings.EnvDatabaseURL
)

// StateDir resolves the state directory: $OPENPROGRAM_HOME if set, else
// ~/.openprogram, or ~/.openprogram-<profile> when OPENPROGRAM_PROFILE is set.
// The result is absolute and cleaned; it is not created.
func StateDir(env Env) (string, error) { return settings.StateDir(env) }
