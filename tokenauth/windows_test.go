//go:build windows

package tokenauth_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/internal/wine"
	"github.com/openprogram/openprogram/tokenauth"
)

// TestWindowsSecretFiles runs the token, the audit key and the audit anchor
// through their whole life on Windows: created owner-only in a new state
// directory, read back, never replaced by Create, rotated, rewritten.
func TestWindowsSecretFiles(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state", ".openprogram")
	path := tokenauth.Path(state)
	token, err := tokenauth.Create(path)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	env := []string{tokenauth.EnvVar + "=" + token}
	id, err := tokenauth.Authenticate(env, path)
	if err != nil || id != tokenauth.Fingerprint(token) {
		t.Fatalf("Authenticate = %q, %v; want %q", id, err, tokenauth.Fingerprint(token))
	}
	if _, err := tokenauth.Authenticate([]string{tokenauth.EnvVar + "=wrong"}, path); !errors.Is(err, tokenauth.ErrAuthFailed) {
		t.Errorf("Authenticate with a wrong token: %v, want ErrAuthFailed", err)
	}
	if _, err := tokenauth.Create(path); !errors.Is(err, tokenauth.ErrExists) {
		t.Errorf("a second Create: %v, want ErrExists", err)
	}
	if got, err := tokenauth.Read(path); err != nil || got != token {
		t.Errorf("Create replaced the token or Read failed: %v", err)
	}
	rotated, err := tokenauth.Rotate(path)
	if err != nil || rotated == token {
		t.Fatalf("Rotate = %v (same token: %v)", err, rotated == token)
	}
	if _, err := tokenauth.Authenticate(env, path); !errors.Is(err, tokenauth.ErrAuthFailed) {
		t.Errorf("the old token after Rotate: %v, want ErrAuthFailed", err)
	}

	key, created, err := tokenauth.LoadOrCreateKey(tokenauth.KeyPath(state))
	if err != nil || !created || len(key) != tokenauth.KeySize {
		t.Fatalf("LoadOrCreateKey = %d bytes, created %v, %v", len(key), created, err)
	}
	again, created, err := tokenauth.LoadOrCreateKey(tokenauth.KeyPath(state))
	if err != nil || created || string(again) != string(key) {
		t.Errorf("LoadOrCreateKey again: created %v, same %v, %v", created, string(again) == string(key), err)
	}
	for _, text := range []string{"head-1", "head-2"} {
		if err := tokenauth.WriteAnchor(tokenauth.AnchorPath(state), []byte(text)); err != nil {
			t.Fatalf("WriteAnchor(%s): %v", text, err)
		}
		if got, err := tokenauth.ReadAnchor(tokenauth.AnchorPath(state)); err != nil || string(got) != text {
			t.Errorf("ReadAnchor = %q, %v; want %q", got, err, text)
		}
	}

	if _, err := tokenauth.Read(filepath.Join(state, "missing")); !errors.Is(err, tokenauth.ErrUnavailable) {
		t.Errorf("Read of a missing file: %v, want ErrUnavailable", err)
	}
	if err := os.Mkdir(filepath.Join(state, "dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := tokenauth.Read(filepath.Join(state, "dir")); !errors.Is(err, tokenauth.ErrUnavailable) {
		t.Errorf("Read of a directory: %v, want ErrUnavailable", err)
	}
	entries, _ := os.ReadDir(state)
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".tmp" {
			t.Errorf("a temporary file was left behind: %s", e.Name())
		}
	}
}

// TestWindowsRefusesFilesOpenToOthers: a token file (or state directory)
// whose DACL lets others in is refused, with the same sentinel as on Unix.
func TestWindowsRefusesFilesOpenToOthers(t *testing.T) {
	if wine.Detected() {
		t.Skip("Wine keeps no DACLs (every file reads back as open to everyone): a real Windows runner checks this")
	}
	state := filepath.Join(t.TempDir(), "state")
	if _, err := tokenauth.Create(tokenauth.Path(state)); err != nil {
		t.Fatal(err)
	}
	// A file written by os.WriteFile inherits the temp directory's DACL
	// (Administrators among others), which is open to others.
	open := filepath.Join(state, "open")
	if err := os.WriteFile(open, []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(open)
	if err != nil {
		t.Fatal(err)
	}
	inherited := privatefile.CheckPrivate(f)
	f.Close()
	if inherited == nil {
		t.Skip("the temp directory's DACL is owner-only already: nothing open to others to test")
	}
	if _, err := tokenauth.Read(open); !errors.Is(err, tokenauth.ErrUnavailable) {
		t.Errorf("Read of a file open to others: %v, want ErrUnavailable", err)
	}
	// A state directory open to others is refused too.
	if _, err := tokenauth.Create(filepath.Join(t.TempDir(), tokenauth.FileName)); err == nil {
		t.Errorf("Create in a directory open to others succeeded")
	}
}
