package cli_test

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// Read-only commands report a missing state directory instead of creating it
// (and an empty database) behind the user's back.
func TestReadOnlyCommandsDoNotInstall(t *testing.T) {
	for _, args := range [][]string{
		{"sessions", "list"},
		{"sessions", "show", "mcp_x"},
		{"audit", "tail"},
		{"audit", "verify"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			env, state := fresh(t)
			r := runCLI(t, env, args...)
			if r.code != 1 || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q; want 1 and empty", r.code, r.stdout)
			}
			if want := "Error: no state directory at " + state + " yet"; !strings.HasPrefix(r.stderr, want) {
				t.Errorf("stderr = %q, want prefix %q", r.stderr, want)
			}
			if _, err := os.Lstat(state); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("state directory exists after %v: %v", args, err)
			}
		})
	}
}
