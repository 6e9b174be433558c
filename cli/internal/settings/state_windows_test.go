//go:build windows

package settings_test

import (
	"testing"

	"github.com/openprogram/openprogram/cli/internal/settings"
)

// TestStateDirWindowsDefault: with no OPENPROGRAM_HOME the state directory
// is %USERPROFILE%\.openprogram (Windows sets no HOME; Git Bash's HOME does
// not count).
func TestStateDirWindowsDefault(t *testing.T) {
	for _, c := range []struct {
		env  settings.Env
		want string
	}{
		{settings.Env{`USERPROFILE=C:\Users\Ann`}, `C:\Users\Ann\.openprogram`},
		{settings.Env{`USERPROFILE=C:\Users\Ann`, `HOME=/c/Users/other`}, `C:\Users\Ann\.openprogram`},
		{settings.Env{`USERPROFILE=C:\Users\Ann`, settings.EnvProfile + `=work`}, `C:\Users\Ann\.openprogram-work`},
	} {
		got, err := settings.StateDir(c.env)
		if err != nil || got != c.want {
			t.Errorf("StateDir(%q) = %q, %v; want %q", c.env, got, err, c.want)
		}
		if !settings.IsDefaultStateDir(c.env, c.want) && len(c.env) == 1 {
			t.Errorf("IsDefaultStateDir(%q, %q) = false", c.env, c.want)
		}
	}
}
