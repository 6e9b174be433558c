package settings

import (
	"regexp"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/runtime/secretenv"
	"github.com/openprogram/openprogram/runtime/tool"
)

// The hand-written name checks must accept exactly what the patterns they
// replace accept.
func FuzzNameChecks(f *testing.F) {
	for _, s := range []string{"", "a", "memory_search", "x.y-z", "A_1", "_", "1abc", "-p", "a b", "é",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65),
		strings.Repeat("a", 127), strings.Repeat("a", 128), strings.Repeat("a", 129)} {
		f.Add(s)
	}
	toolName := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	env := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	profile := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := tool.ValidName(s), toolName.MatchString(s); got != want {
			t.Errorf("tool.ValidName(%q) = %v, want %v", s, got, want)
		}
		if got, want := secretenv.ValidName(s), env.MatchString(s); got != want {
			t.Errorf("secretenv.ValidName(%q) = %v, want %v", s, got, want)
		}
		if got, want := validProfile(s), profile.MatchString(s); got != want {
			t.Errorf("validProfile(%q) = %v, want %v", s, got, want)
		}
	})
}
