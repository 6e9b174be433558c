//go:build unix

package tokenauth_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openprogram/openprogram/tokenauth"
)

func TestCreateKeyReadKey(t *testing.T) {
	path := tokenauth.KeyPath(filepath.Join(privateDir(t), "state"))
	key, err := tokenauth.CreateKey(path)
	if err != nil {
		t.Fatalf("CreateKey(%q) error: %v", path, err)
	}
	if len(key) != tokenauth.KeySize {
		t.Fatalf("CreateKey returned %d bytes, want %d", len(key), tokenauth.KeySize)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o600 {
		t.Errorf("key file mode = %v, want -rw-------", fi.Mode())
	}
	got, err := tokenauth.ReadKey(path)
	if err != nil || !bytes.Equal(got, key) {
		t.Errorf("ReadKey = %x, %v; want the created key", got, err)
	}
	if _, err := tokenauth.CreateKey(path); !errors.Is(err, tokenauth.ErrKeyExists) {
		t.Errorf("CreateKey over an existing key = %v, want ErrKeyExists", err)
	}
	if again, _ := tokenauth.ReadKey(path); !bytes.Equal(again, key) {
		t.Errorf("key changed after a refused CreateKey")
	}
}

func TestReadKeyRejects(t *testing.T) {
	dir := privateDir(t)
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := randomToken(t)
	if key, err := tokenauth.ReadKey(write("good", good, 0o600)); err != nil || len(key) != tokenauth.KeySize {
		t.Fatalf("ReadKey(a valid key file) = %d bytes, %v; want %d bytes", len(key), err, tokenauth.KeySize)
	}
	for _, tc := range []struct{ name, path string }{
		{"missing", filepath.Join(dir, "missing")},
		{"mode 0644", write("open", good, 0o644)},
		{"short", write("short", good[:20], 0o600)},
		{"newline", write("newline", good+"\n", 0o600)},
		{"not base64url", write("std", strings.Repeat("+", 43), 0o600)},
	} {
		key, err := tokenauth.ReadKey(tc.path)
		if !errors.Is(err, tokenauth.ErrKeyUnavailable) || key != nil {
			t.Errorf("ReadKey(%s) = %x, %v; want ErrKeyUnavailable", tc.name, key, err)
		}
		if err != nil {
			checkNoSecret(t, err.Error(), good)
		}
	}
	if err := os.Symlink(write("target", good, 0o600), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if _, err := tokenauth.ReadKey(filepath.Join(dir, "link")); !errors.Is(err, tokenauth.ErrKeyUnavailable) {
		t.Errorf("ReadKey(symlink) = %v, want ErrKeyUnavailable", err)
	}
}

func TestLoadOrCreateKey(t *testing.T) {
	path := tokenauth.KeyPath(privateDir(t))
	const n = 8
	keys := make([][]byte, n)
	created := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var err error
			keys[i], created[i], err = tokenauth.LoadOrCreateKey(path)
			if err != nil {
				t.Errorf("LoadOrCreateKey error: %v", err)
			}
		})
	}
	wg.Wait()
	makers := 0
	for i := range n {
		if created[i] {
			makers++
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Errorf("caller %d got another key than caller 0", i)
		}
	}
	if makers != 1 {
		t.Errorf("%d callers report creating the key, want exactly 1", makers)
	}
	key, made, err := tokenauth.LoadOrCreateKey(path)
	if err != nil || made || !bytes.Equal(key, keys[0]) {
		t.Errorf("LoadOrCreateKey on an existing key = %x, created %v, %v; want the same key, not created", key, made, err)
	}
}

func TestSigningKeyAndPins(t *testing.T) {
	dir := filepath.Join(privateDir(t), "state")
	path := tokenauth.SigningKeyPath(dir)
	if _, err := tokenauth.ReadSigningKey(path); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, tokenauth.ErrSigningKeyUnavailable) {
		t.Fatalf("ReadSigningKey(missing) = %v, want ErrSigningKeyUnavailable and fs.ErrNotExist", err)
	}
	key, created, err := tokenauth.LoadOrCreateSigningKey(path)
	if err != nil || !created || len(key) != ed25519.PrivateKeySize {
		t.Fatalf("LoadOrCreateSigningKey = %d bytes, %v, %v; want a new key", len(key), created, err)
	}
	again, created, err := tokenauth.LoadOrCreateSigningKey(path)
	if err != nil || created || !again.Equal(key) {
		t.Fatalf("LoadOrCreateSigningKey again = created %v, %v; want the same key", created, err)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode() != 0o600 {
		t.Errorf("signing key file = %v, %v; want mode 0600", fi, err)
	}
	pins := tokenauth.PinsPath(dir)
	text := []byte(strings.Repeat("k", 5000)) // more than a token file may hold
	if err := tokenauth.WritePins(pins, text); err != nil {
		t.Fatal(err)
	}
	if got, err := tokenauth.ReadPins(pins); err != nil || string(got) != string(text) {
		t.Errorf("ReadPins = %d bytes, %v; want what was written", len(got), err)
	}
	if fi, err := os.Lstat(pins); err != nil || fi.Mode() != 0o600 {
		t.Errorf("pins file = %v, %v; want mode 0600", fi, err)
	}
	if err := tokenauth.WritePins(pins, make([]byte, 65<<10)); !errors.Is(err, tokenauth.ErrPinsWrite) {
		t.Errorf("WritePins(65 KiB) = %v, want ErrPinsWrite", err)
	}
}
