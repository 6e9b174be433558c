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

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want [][]string
	}{
		{`hello world`, 10, [][]string{{"hello"}, {"world"}}},
		{`"quoted" NEAR(a b) c++ e-mail`, 10, [][]string{{"quoted"}, {"NEAR", "a"}, {"b"}, {"c"}, {"e", "mail"}}},
		{`* ^ - : ( ) " ' ; \ `, 10, nil},
		{"naïve café 東京 x\u0301", 10, [][]string{{"naïve"}, {"café"}, {"東京"}, {"x\u0301"}}},
		{"a b c d", 2, [][]string{{"a"}, {"b"}}},
		{"\x00alpha\x00", 10, [][]string{{"alpha"}}},
	} {
		if diff := cmp.Diff(tc.want, Words(tc.in, tc.max)); diff != "" {
			t.Errorf("Words(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestExcerpt(t *testing.T) {
	text := strings.Repeat("filler ", 40) + "the Zebra\n\tgrazes " + strings.Repeat("more ", 40)
	got := Excerpt(text, [][]string{{"zebra"}})
	if !strings.Contains(got, "the Zebra grazes") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") {
		t.Errorf("Excerpt = %q, want a one-line window around the match", got)
	}
	if got := Excerpt("short text", [][]string{{"absent"}}); got != "short text" {
		t.Errorf("Excerpt(no match) = %q, want the start", got)
	}
}
