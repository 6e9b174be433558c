//go:build darwin

package clients

import (
	"path/filepath"

	"github.com/openprogram/openprogram/cli/internal/settings"
)

// userConfigDir is where Claude Desktop and VS Code keep their user
// configuration on macOS, as os.UserConfigDir says.
func userConfigDir(_ settings.Env, home string) string {
	return filepath.Join(home, "Library", "Application Support")
}
