//go:build windows

package clients

import (
	"path/filepath"

	"github.com/openprogram/openprogram/cli/internal/settings"
)

// userConfigDir is where Claude Desktop and VS Code keep their user
// configuration on Windows: %APPDATA% (the roaming profile), else
// AppData\Roaming under the profile.
func userConfigDir(env settings.Env, home string) string {
	if a := env.Get("APPDATA"); filepath.IsAbs(a) {
		return a
	}
	return filepath.Join(home, "AppData", "Roaming")
}
