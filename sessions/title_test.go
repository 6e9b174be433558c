package sessions_test

import (
	"strings"
	"testing"

	"github.com/openprogram/openprogram/sessions"
)

func TestTitle(t *testing.T) {
	for in, want := range map[string]string{
		"  Fix the build\nthen more":     "Fix the build",
		"\t\n ":                          "fallback",
		"":                               "fallback",
		"tabs\tand   spaces":             "tabs and spaces",
		"\u3000ideographic\u3000space":   "ideographic space",
		strings.Repeat("é", 70):          strings.Repeat("é", 59) + "…",
		strings.Repeat("x", 58) + "  yz": strings.Repeat("x", 58) + "…",
		"exactly sixty " + strings.Repeat("x", 46): "exactly sixty " + strings.Repeat("x", 46),
	} {
		if got := sessions.Title(in, "fallback"); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}
