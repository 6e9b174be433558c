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

func TestCut(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want int
	}{
		{"", 3, 0},
		{"abc", 3, 3},
		{"abc", 10, 3},
		{"abcd", 2, 2},
		{"aé", 2, 1},
		{"👋x", 3, 0},
		{"👋x", 4, 4},
		{"abc", 0, 0},
		{"abc", -5, 0},
	}
	for _, tt := range tests {
		got := Cut(tt.s, tt.n)
		if got != tt.want {
			t.Errorf("Cut(%q, %d) = %d, want %d", tt.s, tt.n, got, tt.want)
		}
		if !utf8.ValidString(tt.s[:got]) {
			t.Errorf("Cut(%q, %d) splits a character", tt.s, tt.n)
		}
	}
}

func TestNext(t *testing.T) {
	for _, tt := range []struct {
		s       string
		i, want int
	}{{"aé", 0, 0}, {"aé", 2, 3}, {"aé", 3, 3}, {"aé", 9, 3}, {"aé", -1, 0}, {"👋x", 1, 4}} {
		if got := Next(tt.s, tt.i); got != tt.want {
			t.Errorf("Next(%q, %d) = %d, want %d", tt.s, tt.i, got, tt.want)
		}
	}
}

func TestMiddle(t *testing.T) {
	if got, cut := Middle("short", 5); got != "short" || cut {
		t.Errorf("Middle(short, 5) = %q, %v; want it unchanged", got, cut)
	}
	got, cut := Middle("0123456789", 4)
	if want := "01\n[... 6 bytes truncated ...]\n89"; got != want || !cut {
		t.Errorf("Middle = %q, %v; want %q, true", got, cut, want)
	}
	// é is two bytes: the head stops before it, the tail starts after it.
	got, _ = Middle("aébcdéf", 4)
	if want := "a\n[... 7 bytes truncated ...]\nf"; got != want {
		t.Errorf("Middle across characters = %q, want %q", got, want)
	}
	for _, n := range []int{-1, 0, 1, 2, 3, 7} {
		got, _ := Middle("👋👋👋", n)
		if !utf8.ValidString(got) {
			t.Errorf("Middle(👋👋👋, %d) = %q splits a character", n, got)
		}
	}
}

func FuzzClip(f *testing.F) {
	f.Add("aé👋", 3)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if !utf8.ValidString(s) {
			return
		}
		c := Cut(s, n)
		if c > len(s) || c < 0 || (len(s) > n && c > n) || !utf8.ValidString(s[:c]) {
			t.Fatalf("Cut(%q, %d) = %d", s, n, c)
		}
		if m, _ := Middle(s, n); !utf8.ValidString(m) {
			t.Fatalf("Middle(%q, %d) = %q", s, n, m)
		}
	})
}
