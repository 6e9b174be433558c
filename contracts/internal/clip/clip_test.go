package clip

import (
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"", 4, ""},
		{"abcd", 4, "abcd"},
		{"abcde", 4, "abcd..."},
		{"aé", 2, "a..."}, // é is two bytes: never cut inside it
		{"aé", 3, "aé"},
		{"👋👋", 5, "👋..."},
		{"abc", 0, "..."},
		{"abc", -1, "..."},
	}
	for _, tt := range tests {
		got := String(tt.s, tt.n)
		if got != tt.want {
			t.Errorf("String(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("String(%q, %d) = %q is not valid UTF-8", tt.s, tt.n, got)
		}
	}
}
