package environ_test

import (
	"testing"

	"github.com/openprogram/openprogram/internal/environ"
)

func TestLookup(t *testing.T) {
	env := []string{"A=1", "B=", "A=2", "AB=3", "=C", "NOEQUALS", "K=v=w"}
	for _, c := range []struct {
		key, want string
		ok        bool
	}{
		{"A", "1", true},   // the first entry counts, as os.Getenv does on Linux
		{"B", "", true},    // set and empty is set
		{"AB", "3", true},  // not a prefix match of A
		{"K", "v=w", true}, // the value may hold "="
		{"C", "", false},   // "=C" names the empty variable, not C
		{"NOEQUALS", "", false},
		{"a", "", false}, // names are case-sensitive here
		{"", "", false},  // no variable has an empty name
		{"MISSING", "", false},
	} {
		got, ok := environ.Lookup(env, c.key)
		if got != c.want || ok != c.ok {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", c.key, got, ok, c.want, c.ok)
		}
	}
}
