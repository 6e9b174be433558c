//go:build unix

package cli_test

import (
	"os"
	"strings"
	"testing"
)

// modeOf is the permission bits of path.
func modeOf(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestInstallFilesOwnerOnly: whatever mode a client's file had (0644 when
// the client saved it under umask 022), install and uninstall leave it, and
// every backup of it, 0600: the backups of a Claude Desktop file hold the
// MCP token and the model key.
func TestInstallFilesOwnerOnly(t *testing.T) {
	for _, ic := range installClients {
		t.Run(ic.client, func(t *testing.T) {
			env, home := installEnv(t)
			path := ic.path(home)
			putFile(t, path, ic.existing, 0o644)
			r := runCLI(t, env, "mcp", "install", "--client", ic.client)
			if r.code != 0 {
				t.Fatalf("install = exit %d stderr %s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "mode 0600 (it was 0644)") {
				t.Errorf("install narrowed %s from 0644 without saying so: %s", path, r.stderr)
			}
			// The client saves the file again, as it does, under umask 022.
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
			mustCLI(t, env, "mcp", "uninstall", "--client", ic.client)
			if m := modeOf(t, path); m != 0o600 {
				t.Errorf("%s after uninstall: mode %v, want 0600", path, m)
			}
			bs := backups(t, path)
			if len(bs) != 2 {
				t.Fatalf("backups = %v, want one of install and one of uninstall", bs)
			}
			for _, b := range bs {
				if m := modeOf(t, b); m != 0o600 {
					t.Errorf("backup %s: mode %v, want 0600", b, m)
				}
			}
		})
	}
}

// TestInstallNarrowsUnchangedFile: Claude Desktop saved the file holding
// the literal token 0644; install again finds nothing to change, but
// makes the file 0600 and says so.
func TestInstallNarrowsUnchangedFile(t *testing.T) {
	env, home := installEnv(t)
	path := installClients[0].path(home)
	mustCLI(t, env, "mcp", "install", "--client", "claude-desktop")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, env, "mcp", "install", "--client", "claude-desktop")
	if r.code != 0 || !strings.Contains(r.stderr, "nothing changed") || !strings.Contains(r.stderr, "mode 0600 (it was 0644)") {
		t.Errorf("second install = exit %d stderr %s, want 0, nothing changed and the mode fixed", r.code, r.stderr)
	}
	if m := modeOf(t, path); m != 0o600 {
		t.Errorf("%s: mode %v after install, want 0600", path, m)
	}
	if got := backups(t, path); len(got) != 0 {
		t.Errorf("install that changed nothing made backups %v", got)
	}
}

// TestDoctorOpenClientFile: doctor fails a client's file that holds the
// token literally and is open to others, and says how to close it.
func TestDoctorOpenClientFile(t *testing.T) {
	env, home := installEnv(t)
	path := installClients[0].path(home)
	mustCLI(t, env, "mcp", "install", "--client", "claude-desktop")
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	line := clientCheckLine(t, runCLI(t, env, "doctor").stdout, "client claude-desktop")
	for _, w := range []string{"FAIL", "mode 0644", "fix: chmod 600 " + path} {
		if !strings.Contains(line, w) {
			t.Errorf("doctor's client claude-desktop line lacks %q: %s", w, line)
		}
	}
}
