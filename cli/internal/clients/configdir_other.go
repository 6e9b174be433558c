//go:build !windows && !darwin

package clients

import "github.com/openprogram/openprogram/cli/internal/settings"

// userConfigDir is where Claude Desktop and VS Code keep their user
// configuration: XDG_CONFIG_HOME, else ~/.config (os.UserConfigDir, with
// the variables taken from env so tests can point it elsewhere).
func userConfigDir(env settings.Env, home string) string { return xdgConfigHome(env, home) }
