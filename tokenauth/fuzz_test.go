//go:build unix

package tokenauth_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/openprogram/openprogram/tokenauth"
)

// flip returns b with every byte changed, so that flip(a) == flip(b)
// exactly when a == b.
func flip(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = c ^ 0x5a
	}
	return out
}

// FuzzAuthenticate stores arbitrary bytes and presents an arbitrary value:
// Authenticate succeeds exactly when they are equal (and valid), and its
// error text is the same for a twin pair that differs from both in every
// byte (keeping lengths and equality), so it cannot carry any part of either
// secret. A plain "does not contain" check would be weaker and would trip on
// values that happen to spell words of the message.
func FuzzAuthenticate(f *testing.F) {
	seed := "Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg"
	f.Add(seed, []byte(seed))
	f.Add(seed, []byte(seed+"\n"))
	f.Add(seed+"\n", []byte(seed))
	f.Add(seed, []byte(" "+seed))
	f.Add("", []byte(seed))
	f.Add(seed, []byte{})
	f.Add("a", []byte("b"))
	f.Add("x", []byte("x"))
	f.Add(seed, []byte(strings.Repeat("a", 4097)))
	f.Add(strings.Repeat("a", 4096), []byte(strings.Repeat("a", 4096)))
	f.Add("\x00", []byte("\x00"))
	f.Add("a=b", []byte("a=b"))

	dir := f.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		f.Fatal(err)
	}
	path := tokenauth.Path(dir)
	store := func(t *testing.T, b []byte) {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatalf("write: %v", err)
		}
	}

	f.Fuzz(func(t *testing.T, value string, stored []byte) {
		environ := []string{tokenauth.EnvVar + "=" + value}
		store(t, stored)
		id, err := tokenauth.Authenticate(environ, path)

		var want error
		switch {
		case value == "":
			want = tokenauth.ErrEnvRequired
		case len(stored) == 0 || len(stored) > 4096:
			want = tokenauth.ErrUnavailable
		case value != string(stored):
			want = tokenauth.ErrAuthFailed
		}
		if want == nil {
			if err != nil || id != tokenauth.Fingerprint(value) {
				t.Fatalf("Authenticate(equal) = %q, %v; want %q, nil", id, err, tokenauth.Fingerprint(value))
			}
			return
		}
		if id != "" || !errors.Is(err, want) {
			t.Fatalf("Authenticate = %q, %v; want \"\", %v", id, err, want)
		}
		// The twin differs in every byte and keeps every length and the
		// equality between the two: its error text must be identical.
		store(t, flip(stored))
		_, twinErr := tokenauth.Authenticate([]string{tokenauth.EnvVar + "=" + string(flip([]byte(value)))}, path)
		if twinErr == nil || twinErr.Error() != err.Error() {
			t.Fatalf("error text depends on the secrets: %v, and for the twin %v", err, twinErr)
		}
	})
}

func FuzzFingerprint(f *testing.F) {
	f.Add("")
	f.Add("abc")
	f.Add("Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eHF1dXg")
	f.Add("\x00\xff")
	f.Fuzz(func(t *testing.T, token string) {
		got := tokenauth.Fingerprint(token)
		if !fingerprintRE.MatchString(got) {
			t.Fatalf("Fingerprint(%q) = %q, want 16 lowercase hex characters", token, got)
		}
		sum := sha256.Sum256([]byte(token))
		if want := hex.EncodeToString(sum[:])[:16]; got != want {
			t.Fatalf("Fingerprint(%q) = %q, want %q", token, got, want)
		}
		if again := tokenauth.Fingerprint(token); again != got {
			t.Fatalf("Fingerprint(%q) = %q, then %q", token, got, again)
		}
	})
}

// FuzzCreate creates a token at arbitrary paths below a directory laid out
// as:
//
//	real/  (0700)   open/  (0755)   file   link -> real   mcp_server_token
//
// and checks the result against what the rules say.
func FuzzCreate(f *testing.F) {
	for _, s := range []string{
		"mcp_server_token", "new", "real/x", "real/a/b/c", "open/x", "open/a/x",
		"link/x", "link/a/x", "file/x", "file", "real", "link", "./real/../new",
		"a//b///c", "x/../link/y", "real/\x00", strings.Repeat("d/", 40) + "t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		if len(rel) > 200 {
			return
		}
		root := t.TempDir()
		if err := os.Chmod(root, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, d := range []struct {
			name string
			mode os.FileMode
		}{{"real", 0o700}, {"open", 0o755}} {
			if err := os.Mkdir(filepath.Join(root, d.name), d.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(root, d.name), d.mode); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(root, "real"), filepath.Join(root, "link")); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, tokenauth.FileName), []byte("existing"), 0o600); err != nil {
			t.Fatal(err)
		}

		path := filepath.Join(root, rel)
		if !strings.HasPrefix(path, root+"/") {
			return // outside the sandbox
		}
		clean := strings.TrimPrefix(path, root+"/")
		parts := strings.Split(clean, "/")
		parents, name := parts[:len(parts)-1], parts[len(parts)-1]

		var want error
		switch {
		case strings.ContainsRune(clean, 0):
			want = tokenauth.ErrCreate
		case len(parents) == 0 && (name == "real" || name == "open" || name == "file" ||
			name == "link" || name == tokenauth.FileName):
			want = tokenauth.ErrExists
		case len(parents) > 0 && (parents[0] == "link" || parents[0] == "file" || parents[0] == tokenauth.FileName):
			want = tokenauth.ErrCreate
		case len(parents) == 1 && parents[0] == "open":
			want = tokenauth.ErrCreate
		}

		token, err := tokenauth.Create(path)
		if want != nil {
			if token != "" || !errors.Is(err, want) {
				t.Fatalf("Create(%q) = %q, %v; want \"\", %v", clean, token, err, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("Create(%q) = %v, want success", clean, err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != token {
			t.Fatalf("file holds %q, %v; want the token", got, err)
		}
		// Every directory Create made is 0700; nothing outside the path changed.
		for i := range parents {
			d := filepath.Join(append([]string{root}, parents[:i+1]...)...)
			var st syscall.Stat_t
			if err := syscall.Lstat(d, &st); err != nil {
				t.Fatal(err)
			}
			if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
				t.Fatalf("%q is not a directory", d)
			}
			if !(i == 0 && parents[0] == "open") && st.Mode&0o7777 != 0o700 {
				t.Fatalf("%q has mode %#o, want 0700", d, st.Mode&0o7777)
			}
		}
		id, err := tokenauth.Authenticate([]string{tokenauth.EnvVar + "=" + token}, path)
		if err != nil || id != tokenauth.Fingerprint(token) {
			t.Fatalf("Authenticate after Create = %q, %v", id, err)
		}
	})
}
