package tokenauth

import (
	"crypto/subtle"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestTokenComparisonIsConstantTime pins the comparer: equal is
// crypto/subtle.ConstantTimeCompare, and Authenticate decides by what equal
// says (a comparer that always agrees lets a wrong token in; one that never
// does keeps the right one out).
func TestTokenComparisonIsConstantTime(t *testing.T) {
	if reflect.ValueOf(equal).Pointer() != reflect.ValueOf(subtle.ConstantTimeCompare).Pointer() {
		t.Fatal("the token comparer is not crypto/subtle.ConstantTimeCompare")
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := Path(dir)
	token, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	saved := equal
	t.Cleanup(func() { equal = saved })

	var calls int
	var gotArgs [2]string
	equal = func(x, y []byte) int {
		calls++
		gotArgs = [2]string{string(x), string(y)}
		return 1
	}
	if _, err := Authenticate([]string{EnvVar + "=wrong"}, path); err != nil {
		t.Errorf("with a comparer that agrees, a wrong token was refused (%v): Authenticate does not decide by equal", err)
	}
	if calls != 1 || gotArgs != [2]string{"wrong", token} {
		t.Errorf("equal called %d times with %q, want once with the presented and the stored token", calls, gotArgs)
	}
	equal = func([]byte, []byte) int { return 0 }
	if _, err := Authenticate([]string{EnvVar + "=" + token}, path); err == nil {
		t.Error("with a comparer that never agrees, the right token was accepted: Authenticate does not decide by equal")
	}
}
