package grep

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type hit struct {
	Line    int
	Snippet string
}

func lines(m Matcher, content string, max int) []hit {
	var out []hit
	m.Lines(content, func(line int, snippet string) bool {
		out = append(out, hit{line, snippet})
		return len(out) < max
	})
	return out
}

func TestLines(t *testing.T) {
	content := "Alpha\r\nbeta ALPHA\n\nÄrger alpha\nlast alpha"
	for _, tc := range []struct {
		sub  string
		cs   bool
		max  int
		want []hit
	}{
		{"alpha", false, 10, []hit{{1, "Alpha"}, {2, "beta ALPHA"}, {4, "Ärger alpha"}, {5, "last alpha"}}},
		{"alpha", true, 10, []hit{{4, "Ärger alpha"}, {5, "last alpha"}}},
		{"ärger", false, 10, []hit{{4, "Ärger alpha"}}},
		{"alpha", false, 2, []hit{{1, "Alpha"}, {2, "beta ALPHA"}}},
		{"", false, 10, nil},
		{"\n", false, 10, nil},
	} {
		got := lines(New(tc.sub, tc.cs), content, tc.max)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Lines(%q, caseSensitive=%v, max %d) (-want +got):\n%s", tc.sub, tc.cs, tc.max, diff)
		}
	}
}

func TestSnippet(t *testing.T) {
	long := strings.Repeat("é", MaxSnippet) // 2 bytes each
	got := Snippet(long)
	if len(got) > MaxSnippet+len("…") || !strings.HasSuffix(got, "…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("Snippet(long) = %d bytes %q…, want a rune-aligned cut at %d bytes plus …", len(got), got[:10], MaxSnippet)
	}
	if Snippet("short") != "short" {
		t.Errorf("Snippet(short) changed it")
	}
}

func TestASCII(t *testing.T) {
	for s, want := range map[string]bool{"": true, "Hello, World!": true, "héllo": false, "\x7f": true, "\x80": false} {
		if got := ASCII(s); got != want {
			t.Errorf("ASCII(%q) = %v, want %v", s, got, want)
		}
	}
}
