//go:build unix

package tokenauth_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/openprogram/tokenauth"
)

func TestAuthenticate(t *testing.T) {
	path := tokenPath(privateDir(t))
	token, err := tokenauth.Create(path)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	before := stateOf(t, path)

	id, err := authenticate(t, env(token), path)
	if err != nil {
		t.Fatalf("Authenticate = %v", err)
	}
	if want := tokenauth.Fingerprint(token); id != want {
		t.Errorf("Authenticate = %q, want %q", id, want)
	}
	checkUnchanged(t, path, before)
}

func TestAuthenticateExactBytes(t *testing.T) {
	// Whatever the file holds is the token: no trimming, no format check.
	tests := []struct {
		name   string
		stored string
	}{
		{"one byte", "x"},
		{"trailing newline on both sides", randomToken(t) + "\n"},
		{"spaces", "  a token with spaces  "},
		{"4096 bytes", strings.Repeat("a", 4096)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tokenPath(privateDir(t))
			writeFile(t, path, []byte(tt.stored), 0o600)
			id, err := authenticate(t, env(tt.stored), path)
			if err != nil {
				t.Fatalf("Authenticate = %v", err)
			}
			if want := tokenauth.Fingerprint(tt.stored); id != want {
				t.Errorf("Authenticate = %q, want %q", id, want)
			}
		})
	}
}

func TestAuthenticateEnv(t *testing.T) {
	token := randomToken(t)
	wrong := randomToken(t)
	key := tokenauth.EnvVar
	tests := []struct {
		name    string
		environ []string
		want    error // nil: success
	}{
		{"set", []string{key + "=" + token}, nil},
		{"nil environ", nil, tokenauth.ErrEnvRequired},
		{"missing", []string{"HOME=/root", "PATH=/bin"}, tokenauth.ErrEnvRequired},
		{"empty", []string{key + "="}, tokenauth.ErrEnvRequired},
		{"no equals sign", []string{key}, tokenauth.ErrEnvRequired},
		{"other case", []string{strings.ToLower(key) + "=" + token}, tokenauth.ErrEnvRequired},
		{"longer name", []string{key + "X=" + token}, tokenauth.ErrEnvRequired},
		{"first wins", []string{key + "=" + token, key + "=" + wrong}, nil},
		{"first wins against", []string{key + "=" + wrong, key + "=" + token}, tokenauth.ErrAuthFailed},
		{"first empty wins", []string{key + "=", key + "=" + token}, tokenauth.ErrEnvRequired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tokenPath(privateDir(t))
			writeFile(t, path, []byte(token), 0o600)
			id, err := authenticate(t, tt.environ, path)
			if tt.want == nil {
				if err != nil || id != tokenauth.Fingerprint(token) {
					t.Fatalf("Authenticate = %q, %v; want %q, nil", id, err, tokenauth.Fingerprint(token))
				}
				return
			}
			if id != "" {
				t.Errorf("Authenticate returned client id %q with an error", id)
			}
			wantErr(t, err, tt.want, token, wrong)
		})
	}
}

func TestAuthenticateEnvCheckedFirst(t *testing.T) {
	// Without a token in the environment the file is not even looked at.
	id, err := authenticate(t, nil, tokenPath(filepath.Join(privateDir(t), "missing")))
	if id != "" {
		t.Errorf("client id %q with an error", id)
	}
	wantErr(t, err, tokenauth.ErrEnvRequired)
}

func TestAuthenticateMismatch(t *testing.T) {
	token := randomToken(t)
	other := randomToken(t)
	tests := []struct {
		name        string
		stored, env string
	}{
		{"different token", token, other},
		{"prefix", token, token[:42]},
		{"longer", token, token + "A"},
		{"trailing newline in file", token + "\n", token},
		{"trailing CRLF in file", token + "\r\n", token},
		{"leading space in file", " " + token, token},
		{"trailing newline in env", token, token + "\n"},
		{"other case", token, strings.ToUpper(token)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tokenPath(privateDir(t))
			writeFile(t, path, []byte(tt.stored), 0o600)
			before := stateOf(t, path)
			id, err := authenticate(t, env(tt.env), path)
			if id != "" {
				t.Errorf("client id %q with an error", id)
			}
			wantErr(t, err, tokenauth.ErrAuthFailed, token, other, tt.env, tt.stored)
			checkUnchanged(t, path, before)
		})
	}
}

// TestAuthenticateMismatchErrorIsFixed: the failure text depends on the
// path only, never on either token.
func TestAuthenticateMismatchErrorIsFixed(t *testing.T) {
	path := tokenPath(privateDir(t))
	writeFile(t, path, []byte(randomToken(t)), 0o600)
	_, first := authenticate(t, env(randomToken(t)), path)
	for range 5 {
		writeFile(t, path, []byte(randomToken(t)+"xyz"), 0o600)
		_, err := authenticate(t, env(randomToken(t)), path)
		if err == nil || first == nil || err.Error() != first.Error() {
			t.Fatalf("mismatch errors differ: %v and %v", first, err)
		}
	}
}

func TestAuthenticateRejectsFile(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root, token string) (path string)
		root  bool // needs root
	}{
		{"missing file", func(t *testing.T, root, token string) string { return tokenPath(root) }, false},
		{"missing parent", func(t *testing.T, root, token string) string {
			return tokenPath(filepath.Join(root, "missing"))
		}, false},
		{"symlinked file", func(t *testing.T, root, token string) string {
			writeFile(t, filepath.Join(root, "real"), []byte(token), 0o600)
			symlink(t, filepath.Join(root, "real"), tokenPath(root))
			return tokenPath(root)
		}, false},
		{"relative symlinked file", func(t *testing.T, root, token string) string {
			writeFile(t, filepath.Join(root, "real"), []byte(token), 0o600)
			symlink(t, "real", tokenPath(root))
			return tokenPath(root)
		}, false},
		{"symlinked parent", func(t *testing.T, root, token string) string {
			real := filepath.Join(root, "real")
			mkdir(t, real, 0o700)
			writeFile(t, tokenPath(real), []byte(token), 0o600)
			symlink(t, real, filepath.Join(root, "link"))
			return tokenPath(filepath.Join(root, "link"))
		}, false},
		{"symlinked ancestor", func(t *testing.T, root, token string) string {
			state := filepath.Join(root, "real", "state")
			mkdir(t, filepath.Join(root, "real"), 0o700)
			mkdir(t, state, 0o700)
			writeFile(t, tokenPath(state), []byte(token), 0o600)
			symlink(t, filepath.Join(root, "real"), filepath.Join(root, "link"))
			return tokenPath(filepath.Join(root, "link", "state"))
		}, false},
		{"group-readable file", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), []byte(token), 0o640)
			return tokenPath(root)
		}, false},
		{"world-readable file", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), []byte(token), 0o644)
			return tokenPath(root)
		}, false},
		{"group-writable file", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), []byte(token), 0o620)
			return tokenPath(root)
		}, false},
		{"read-only file", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), []byte(token), 0o400)
			return tokenPath(root)
		}, false},
		{"executable file", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), []byte(token), 0o700)
			return tokenPath(root)
		}, false},
		{"setuid file", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), []byte(token), 0o4600)
			return tokenPath(root)
		}, false},
		{"sticky file", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), []byte(token), 0o1600)
			return tokenPath(root)
		}, false},
		{"group-writable parent", func(t *testing.T, root, token string) string {
			dir := filepath.Join(root, "state")
			mkdir(t, dir, 0o700)
			writeFile(t, tokenPath(dir), []byte(token), 0o600)
			chmod(t, dir, 0o770)
			return tokenPath(dir)
		}, false},
		{"other-readable parent", func(t *testing.T, root, token string) string {
			dir := filepath.Join(root, "state")
			mkdir(t, dir, 0o700)
			writeFile(t, tokenPath(dir), []byte(token), 0o600)
			chmod(t, dir, 0o705)
			return tokenPath(dir)
		}, false},
		{"oversized file", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), []byte(token+strings.Repeat("a", 4097-len(token))), 0o600)
			return tokenPath(root)
		}, false},
		{"huge file", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), bytes.Repeat([]byte(token), 10000), 0o600)
			return tokenPath(root)
		}, false},
		{"empty file", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), nil, 0o600)
			return tokenPath(root)
		}, false},
		{"fifo", func(t *testing.T, root, token string) string {
			mkfifo(t, tokenPath(root))
			return tokenPath(root)
		}, false},
		{"directory", func(t *testing.T, root, token string) string {
			mkdir(t, tokenPath(root), 0o700)
			return tokenPath(root)
		}, false},
		{"parent is a file", func(t *testing.T, root, token string) string {
			writeFile(t, filepath.Join(root, "state"), []byte(token), 0o600)
			return tokenPath(filepath.Join(root, "state"))
		}, false},
		{"empty path", func(t *testing.T, root, token string) string { return "" }, false},
		{"root directory", func(t *testing.T, root, token string) string { return "/" }, false},
		{"file owned by another user", func(t *testing.T, root, token string) string {
			writeFile(t, tokenPath(root), []byte(token), 0o600)
			chownOther(t, tokenPath(root))
			return tokenPath(root)
		}, true},
		{"parent owned by another user", func(t *testing.T, root, token string) string {
			dir := filepath.Join(root, "state")
			mkdir(t, dir, 0o700)
			writeFile(t, tokenPath(dir), []byte(token), 0o600)
			chownOther(t, dir)
			return tokenPath(dir)
		}, true},
		{"character device", func(t *testing.T, root, token string) string {
			// Same numbers as /dev/null; never opened by Authenticate.
			if err := syscall.Mknod(tokenPath(root), syscall.S_IFCHR|0o600, 1<<8|3); err != nil {
				t.Fatalf("mknod: %v", err)
			}
			return tokenPath(root)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skipf("needs root (to chown or mknod); running as uid %d", os.Geteuid())
			}
			root := privateDir(t)
			token := randomToken(t)
			path := tt.setup(t, root, token)
			var before fileState
			if path != "" {
				before = stateOf(t, path)
			}

			id, err := authenticate(t, env(token), path)
			if id != "" {
				t.Errorf("client id %q with an error", id)
			}
			wantErr(t, err, tokenauth.ErrUnavailable, token)
			if path != "" {
				checkUnchanged(t, path, before)
			}
		})
	}
}

// TestAuthenticateFileChangedWhileRead changes the file between the read and
// the second look: Authenticate must notice.
func TestAuthenticateFileChangedWhileRead(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, path string)
	}{
		{"appended", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString("more"); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated", func(t *testing.T, path string) {
			if err := os.Truncate(path, 10); err != nil {
				t.Fatal(err)
			}
		}},
		{"touched", func(t *testing.T, path string) {
			old := time.Unix(1, 0)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tokenPath(privateDir(t))
			token, err := tokenauth.Create(path)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			called := false
			restore := tokenauth.SetTestHooks(tokenauth.TestHooks{AfterRead: func(p string) {
				called = true
				tt.change(t, p)
			}})
			defer restore()
			id, err := authenticate(t, env(token), path)
			if !called {
				t.Fatalf("read hook not called")
			}
			if id != "" {
				t.Errorf("client id %q with an error", id)
			}
			wantErr(t, err, tokenauth.ErrUnavailable, token)
		})
	}
}

var fingerprintRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

func TestFingerprint(t *testing.T) {
	tests := []struct{ token, want string }{
		// First 16 hex characters of well-known SHA-256 values.
		{"", "e3b0c44298fc1c14"},
		{"abc", "ba7816bf8f01cfea"},
	}
	for _, tt := range tests {
		if got := tokenauth.Fingerprint(tt.token); got != tt.want {
			t.Errorf("Fingerprint(%q) = %q, want %q", tt.token, got, tt.want)
		}
	}
	token := randomToken(t)
	first := tokenauth.Fingerprint(token)
	if !fingerprintRE.MatchString(first) {
		t.Errorf("Fingerprint(token) = %q, want 16 lowercase hex characters", first)
	}
	for range 3 {
		if got := tokenauth.Fingerprint(token); got != first {
			t.Errorf("Fingerprint(token) = %q, then %q; want it stable", first, got)
		}
	}
	checkNoSecret(t, first, token)
	if other := tokenauth.Fingerprint(randomToken(t)); other == first {
		t.Errorf("two tokens share fingerprint %q", first)
	}
}

func TestPath(t *testing.T) {
	tests := []struct{ stateDir, want string }{
		{"/home/u/.openprogram", "/home/u/.openprogram/mcp_server_token"},
		{"/home/u/.openprogram/", "/home/u/.openprogram/mcp_server_token"},
		{"state", "state/mcp_server_token"},
	}
	for _, tt := range tests {
		if got := tokenauth.Path(tt.stateDir); got != tt.want {
			t.Errorf("Path(%q) = %q, want %q", tt.stateDir, got, tt.want)
		}
	}
}
