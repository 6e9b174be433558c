package authz_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openprogram/openprogram/authz"
)

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 10, "abcdefghij..."},
		{"aé", 2, "a..."}, // é is two bytes: never half of it
		{"€€", 4, "€..."}, // € is three bytes
		{strings.Repeat("€", 5), 0, "..."},
		{"x", -1, "..."},
	} {
		got := authz.Clip(tt.s, tt.n)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func FuzzClip(f *testing.F) {
	f.Add("aé€😀", 3)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if !utf8.ValidString(s) {
			return
		}
		got := authz.Clip(s, n)
		body, clipped := strings.CutSuffix(got, authz.ClipMarker)
		switch {
		case !utf8.ValidString(got):
			t.Fatalf("Clip(%q, %d) = %q: invalid UTF-8", s, n, got)
		case got == s:
		case !clipped || !strings.HasPrefix(s, body) || len(body) > max(n, 0):
			t.Fatalf("Clip(%q, %d) = %q: want a prefix of at most %d bytes and the marker", s, n, got, n)
		}
	})
}
