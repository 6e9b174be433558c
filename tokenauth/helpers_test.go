//go:build unix

package tokenauth_test

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/openprogram/tokenauth"
)

// sentinels lists every sentinel; each returned error must wrap exactly one.
var sentinels = []struct {
	name string
	err  error
}{
	{"ErrExists", tokenauth.ErrExists},
	{"ErrCreate", tokenauth.ErrCreate},
	{"ErrRotate", tokenauth.ErrRotate},
	{"ErrUnavailable", tokenauth.ErrUnavailable},
	{"ErrEnvRequired", tokenauth.ErrEnvRequired},
	{"ErrAuthFailed", tokenauth.ErrAuthFailed},
}

// randomToken returns a token shaped like Create's, for files the tests
// write themselves.
func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("rand.Read: %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func env(token string) []string {
	return []string{"HOME=/nonexistent", tokenauth.EnvVar + "=" + token, "LANG=C"}
}

// wantErr checks that err wraps want and no other sentinel, and that its
// text holds none of secrets, nor any 8-byte piece of one.
func wantErr(t *testing.T, err, want error, secrets ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %v", want)
	}
	if !errors.Is(err, want) {
		t.Errorf("err = %q, want it to wrap %q", err, want)
	}
	var wrapped []string
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			wrapped = append(wrapped, s.name)
		}
	}
	if len(wrapped) != 1 {
		t.Errorf("err = %q wraps %v, want exactly one sentinel", err, wrapped)
	}
	checkNoSecret(t, err.Error(), secrets...)
	t.Logf("err = %v", err)
}

// checkNoSecret fails the test if text contains a secret or a piece of one.
func checkNoSecret(t *testing.T, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s == "" {
			continue
		}
		if strings.Contains(text, s) {
			t.Errorf("text %q contains the secret", text)
			continue
		}
		for i := 0; i+8 <= len(s); i++ {
			if strings.Contains(text, s[i:i+8]) {
				t.Errorf("text %q contains part %q of the secret", text, s[i:i+8])
				break
			}
		}
	}
}

// privateDir returns a fresh directory with mode 0700 owned by the caller.
func privateDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	chmod(t, dir, 0o700)
	return dir
}

// chmod sets the raw mode bits (setuid, setgid and sticky included).
func chmod(t *testing.T, path string, mode uint32) {
	t.Helper()
	if err := syscall.Chmod(path, mode); err != nil {
		t.Fatalf("chmod %q: %v", path, err)
	}
}

func mkdir(t *testing.T, path string, mode uint32) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatalf("mkdir: %v", err)
	}
	chmod(t, path, mode)
}

func writeFile(t *testing.T, path string, data []byte, mode uint32) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("write %q: %v", path, err)
	}
	chmod(t, path, mode)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatalf("symlink: %v", err)
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatalf("mkfifo %q: %v", path, err)
	}
	chmod(t, path, 0o600)
}

// chownOther gives path to uid/gid 65534 (nobody). Only root can; anyone
// else skips the test, saying why.
func chownOther(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to give %q to another user; running as uid %d", path, os.Geteuid())
	}
	if err := os.Lchown(path, 65534, 65534); err != nil {
		t.Fatalf("chown %q: %v", path, err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %q: %v", path, err)
	}
	return b
}

// listDir returns the names in dir, sorted.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read dir %q: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// fileState is what must not change about a path that a call must leave alone.
type fileState struct {
	exists  bool
	mode    uint32
	uid     uint32
	ino     uint64
	size    int64
	mtime   syscall.Timespec
	content string
	link    string
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
			return fileState{}
		}
		t.Fatalf("lstat %q: %v", path, err)
	}
	fs := fileState{exists: true, mode: uint32(st.Mode), uid: st.Uid, ino: st.Ino, size: st.Size, mtime: mtimeOf(&st)}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFREG:
		fs.content = string(readFile(t, path))
	case syscall.S_IFLNK:
		link, err := os.Readlink(path)
		if err != nil {
			t.Fatalf("readlink: %v", err)
		}
		fs.link = link
	}
	return fs
}

func checkUnchanged(t *testing.T, path string, before fileState) {
	t.Helper()
	if after := stateOf(t, path); after != before {
		t.Errorf("%q changed:\nbefore %+v\nafter  %+v", path, before, after)
	}
}

// authenticate runs Authenticate, failing the test instead of hanging if it
// blocks (as an open of a FIFO would).
func authenticate(t *testing.T, environ []string, path string) (string, error) {
	t.Helper()
	type result struct {
		id  string
		err error
	}
	done := make(chan result, 1)
	go func() {
		id, err := tokenauth.Authenticate(environ, path)
		done <- result{id, err}
	}()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.id, r.err
	case <-timer.C:
		t.Fatalf("Authenticate(%q) blocked for 10s", path)
		return "", nil
	}
}

func stringsEqual(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

func tokenPath(dir string) string { return filepath.Join(dir, tokenauth.FileName) }
