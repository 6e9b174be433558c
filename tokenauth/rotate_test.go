//go:build unix

package tokenauth_test

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/openprogram/openprogram/tokenauth"
)

// TestRotate: the new token replaces the old one in place, with the same
// file rules, and only the new one authenticates.
func TestRotate(t *testing.T) {
	state := filepath.Join(privateDir(t), "state")
	path := tokenauth.Path(state)
	old, err := tokenauth.Create(path)
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	token, err := tokenauth.Rotate(path)
	if err != nil {
		t.Fatalf("Rotate(%q) = %v", path, err)
	}
	if token == old || !tokenRE.MatchString(token) {
		t.Errorf("Rotate = %q, want a new token shaped like Create's (old %q)", token, old)
	}
	checkTokenFile(t, path, token)
	stringsEqual(t, "entries of the state directory", listDir(t, state), []string{tokenauth.FileName})
	if _, err := authenticate(t, env(old), path); !errors.Is(err, tokenauth.ErrAuthFailed) {
		t.Errorf("Authenticate(old token) after Rotate = %v, want ErrAuthFailed", err)
	}
	if _, err := authenticate(t, env(token), path); err != nil {
		t.Errorf("Authenticate(new token) after Rotate = %v", err)
	}
	if got, err := tokenauth.Read(path); err != nil || got != token {
		t.Errorf("Read after Rotate = %q, %v; want the new token", got, err)
	}
}

// TestRotateRefuses: nothing to rotate, or a token file that breaks the
// rules, is an error wrapping ErrRotate and changes nothing.
func TestRotateRefuses(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		path := tokenauth.Path(privateDir(t))
		_, err := tokenauth.Rotate(path)
		wantErr(t, err, tokenauth.ErrRotate)
		if got := listDir(t, filepath.Dir(path)); len(got) != 0 {
			t.Errorf("Rotate on a missing token left %v", got)
		}
	})
	t.Run("mode 0644", func(t *testing.T) {
		path := tokenauth.Path(privateDir(t))
		tok := randomToken(t)
		writeFile(t, path, []byte(tok), 0o644)
		_, err := tokenauth.Rotate(path)
		wantErr(t, err, tokenauth.ErrRotate, tok)
		if got := string(readFile(t, path)); got != tok {
			t.Errorf("Rotate changed a refused file")
		}
	})
	t.Run("symlink", func(t *testing.T) {
		dir := privateDir(t)
		real := filepath.Join(dir, "real")
		writeFile(t, real, []byte(randomToken(t)), 0o600)
		path := tokenauth.Path(dir)
		symlink(t, real, path)
		_, err := tokenauth.Rotate(path)
		wantErr(t, err, tokenauth.ErrRotate)
	})
}

// TestRotateReadersSeeWholeTokens: readers racing with rotations never fail
// and always read a complete token, one of those that were published.
func TestRotateReadersSeeWholeTokens(t *testing.T) {
	path := tokenauth.Path(privateDir(t))
	first, err := tokenauth.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	published := map[string]bool{first: true}
	done := make(chan struct{})
	reads := make([][]string, 4)
	var wg sync.WaitGroup
	for i := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := tokenauth.Read(path)
				if err != nil {
					t.Errorf("Read during rotation = %v", err)
					return
				}
				reads[i] = append(reads[i], got)
			}
		}()
	}
	for range 50 {
		tok, err := tokenauth.Rotate(path)
		if err != nil {
			t.Errorf("Rotate = %v", err)
			break
		}
		published[tok] = true
	}
	close(done)
	wg.Wait()
	n := 0
	for _, rs := range reads {
		for _, got := range rs {
			n++
			if !published[got] {
				t.Fatalf("a reader saw %d bytes that are not a published token", len(got))
			}
		}
	}
	t.Logf("%d reads during 50 rotations", n)
}

// TestRotateTo: a caller makes the new token first (NewToken), records
// what it is about to do, then puts it in place; RotateTo takes only a
// token NewToken could have made, and changes nothing otherwise.
func TestRotateTo(t *testing.T) {
	state := filepath.Join(privateDir(t), "state")
	path := tokenauth.Path(state)
	old, err := tokenauth.Create(path)
	if err != nil {
		t.Fatalf("Create = %v", err)
	}
	token, err := tokenauth.NewToken()
	if err != nil || !tokenRE.MatchString(token) || token == old {
		t.Fatalf("NewToken = %q, %v; want a token shaped like Create's", token, err)
	}
	checkTokenFile(t, path, old) // making a token writes nothing
	for _, bad := range []string{"", "short", old + "x", "!" + old[1:], old[:42] + "\n", old[:20] + "\n" + old[20:]} {
		if err := tokenauth.RotateTo(path, bad); !errors.Is(err, tokenauth.ErrRotate) {
			t.Errorf("RotateTo(%q) = %v, want ErrRotate", bad, err)
		}
	}
	checkTokenFile(t, path, old)
	if err := tokenauth.RotateTo(path, token); err != nil {
		t.Fatalf("RotateTo = %v", err)
	}
	checkTokenFile(t, path, token)
	if _, err := authenticate(t, env(old), path); !errors.Is(err, tokenauth.ErrAuthFailed) {
		t.Errorf("Authenticate(old token) after RotateTo = %v, want ErrAuthFailed", err)
	}
}
