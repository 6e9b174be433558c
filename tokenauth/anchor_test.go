//go:build unix

package tokenauth_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/tokenauth"
)

func TestWriteAnchorReadAnchor(t *testing.T) {
	path := tokenauth.AnchorPath(filepath.Join(privateDir(t), "state"))
	if _, err := tokenauth.ReadAnchor(path); !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, tokenauth.ErrAnchorUnavailable) {
		t.Fatalf("ReadAnchor(missing) = %v, want ErrAnchorUnavailable and fs.ErrNotExist", err)
	}
	for _, text := range []string{"1:" + randomToken(t), "42:" + randomToken(t)} {
		if err := tokenauth.WriteAnchor(path, []byte(text)); err != nil {
			t.Fatalf("WriteAnchor(%q) = %v", text, err)
		}
		got, err := tokenauth.ReadAnchor(path)
		if err != nil || string(got) != text {
			t.Fatalf("ReadAnchor = %q, %v; want %q", got, err, text)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != 0o600 {
			t.Errorf("anchor file mode = %v, want -rw-------", fi.Mode())
		}
	}
	if names := listDir(t, filepath.Dir(path)); len(names) != 1 {
		t.Errorf("state directory holds %v, want only the anchor (no temporary file left)", names)
	}
	for _, bad := range [][]byte{nil, make([]byte, 4097)} {
		if err := tokenauth.WriteAnchor(path, bad); !errors.Is(err, tokenauth.ErrAnchorWrite) {
			t.Errorf("WriteAnchor(%d bytes) = %v, want ErrAnchorWrite", len(bad), err)
		}
	}
}

// TestAnchorRules: the anchor keeps the token's no-symlink and
// permission rules, for writing and for reading.
func TestAnchorRules(t *testing.T) {
	dir := privateDir(t)
	real := filepath.Join(dir, "real")
	mkdir(t, real, 0o700)
	link := filepath.Join(dir, "link")
	symlink(t, real, link)
	if err := tokenauth.WriteAnchor(tokenauth.AnchorPath(link), []byte("1:x")); !errors.Is(err, tokenauth.ErrAnchorWrite) {
		t.Errorf("WriteAnchor through a symlinked directory = %v, want ErrAnchorWrite", err)
	}
	if names := listDir(t, real); len(names) != 0 {
		t.Errorf("WriteAnchor through a symlink wrote %v", names)
	}
	open := filepath.Join(dir, "open")
	mkdir(t, open, 0o755)
	if err := tokenauth.WriteAnchor(tokenauth.AnchorPath(open), []byte("1:x")); !errors.Is(err, tokenauth.ErrAnchorWrite) {
		t.Errorf("WriteAnchor into a directory others can read = %v, want ErrAnchorWrite", err)
	}
	loose := tokenauth.AnchorPath(real)
	writeFile(t, loose, []byte("1:x"), 0o644)
	if _, err := tokenauth.ReadAnchor(loose); !errors.Is(err, tokenauth.ErrAnchorUnavailable) {
		t.Errorf("ReadAnchor(mode 0644) = %v, want ErrAnchorUnavailable", err)
	}
	target := filepath.Join(real, "target")
	writeFile(t, target, []byte("1:x"), 0o600)
	if err := os.Remove(loose); err != nil {
		t.Fatal(err)
	}
	symlink(t, target, loose)
	if _, err := tokenauth.ReadAnchor(loose); !errors.Is(err, tokenauth.ErrAnchorUnavailable) {
		t.Errorf("ReadAnchor(a symlink) = %v, want ErrAnchorUnavailable", err)
	}
}
