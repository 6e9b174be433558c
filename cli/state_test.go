package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/cli"
)

// TestStateDir: $OPENPROGRAM_HOME if set (made absolute and clean), else
// $HOME/.openprogram, or $HOME/.openprogram-<profile>; bad profiles are
// refused.
func TestStateDir(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	abs := func(p string) string { return filepath.Join(testRoot, filepath.FromSlash(p)) }
	h := homeVar + "=" + abs("h")
	for _, tc := range []struct {
		name string
		env  cli.Env
		want string // "" = error
	}{
		{"home", cli.Env{"OPENPROGRAM_HOME=" + abs("srv/op")}, abs("srv/op")},
		{"home cleaned", cli.Env{"OPENPROGRAM_HOME=" + testRoot + "srv/x/../op/"}, abs("srv/op")},
		{"home relative", cli.Env{"OPENPROGRAM_HOME=rel/state"}, filepath.Join(cwd, "rel", "state")},
		{"home beats profile", cli.Env{h, "OPENPROGRAM_PROFILE=work", "OPENPROGRAM_HOME=" + abs("srv/op")}, abs("srv/op")},
		{"default", cli.Env{h}, abs("h/.openprogram")},
		{"profile", cli.Env{h, "OPENPROGRAM_PROFILE=work"}, abs("h/.openprogram-work")},
		{"profile with - and _", cli.Env{h, "OPENPROGRAM_PROFILE=Work_2-b"}, abs("h/.openprogram-Work_2-b")},
		{"empty profile is no profile", cli.Env{h, "OPENPROGRAM_PROFILE="}, abs("h/.openprogram")},
		{"empty home is unset", cli.Env{h, "OPENPROGRAM_HOME="}, abs("h/.openprogram")},
		{"first entry wins", cli.Env{h, homeVar + "=" + abs("other")}, abs("h/.openprogram")},
		{"no HOME in env", cli.Env{}, filepath.Join(userHome, ".openprogram")},
		{"profile with a slash", cli.Env{h, "OPENPROGRAM_PROFILE=a/b"}, ""},
		{"profile climbing", cli.Env{h, "OPENPROGRAM_PROFILE=../evil"}, ""},
		{"profile hidden", cli.Env{h, "OPENPROGRAM_PROFILE=.x"}, ""},
		{"profile with space", cli.Env{h, "OPENPROGRAM_PROFILE=a b"}, ""},
		{"profile too long", cli.Env{h, "OPENPROGRAM_PROFILE=" + strings.Repeat("p", 65)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cli.StateDir(tc.env)
			switch {
			case tc.want == "" && err == nil:
				t.Errorf("StateDir(%q) = %q, want an error", tc.env, got)
			case tc.want == "" && !strings.Contains(err.Error(), "OPENPROGRAM_PROFILE"):
				t.Errorf("StateDir(%q) error = %v, want it to name OPENPROGRAM_PROFILE", tc.env, err)
			case tc.want != "" && (err != nil || got != tc.want):
				t.Errorf("StateDir(%q) = %q, %v; want %q", tc.env, got, err, tc.want)
			}
		})
	}
}

// TestStateDirOfCommands: the commands use the resolved directory: a
// profile's token lands in ~/.openprogram-<profile>, and a bad profile
// fails instead of falling back to the default.
func TestStateDirOfCommands(t *testing.T) {
	home := t.TempDir()
	env := append(homeVars(home), "OPENPROGRAM_PROFILE=work")
	mustCLI(t, env, "mcp", "token", "create")
	if _, err := os.Stat(filepath.Join(home, ".openprogram-work", "mcp_server_token")); err != nil {
		t.Errorf("token of profile work: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, ".openprogram")); !os.IsNotExist(err) {
		t.Errorf("the default state directory was touched (%v)", err)
	}
	bad := append(homeVars(home), "OPENPROGRAM_PROFILE=../work")
	r := runCLI(t, bad, "config", "set", "model.name", "x")
	if r.code != cli.ExitFailure || !strings.Contains(r.stderr, "OPENPROGRAM_PROFILE") {
		t.Errorf("config set with a bad profile = exit %d stderr %q, want 1 naming the profile", r.code, r.stderr)
	}
	entries, _ := os.ReadDir(home)
	if len(entries) != 1 {
		t.Errorf("HOME holds %d entries after the refused profile, want only .openprogram-work", len(entries))
	}
}

func TestEnvLookup(t *testing.T) {
	env := cli.Env{"A=1", "B=", "A=2", "AB=3"}
	for _, tc := range []struct {
		key   string
		value string
		ok    bool
	}{{"A", "1", true}, {"B", "", true}, {"AB", "3", true}, {"C", "", false}} {
		v, ok := env.Lookup(tc.key)
		if v != tc.value || ok != tc.ok || env.Get(tc.key) != tc.value {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.key, v, ok, tc.value, tc.ok)
		}
	}
}
