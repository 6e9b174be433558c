package fulltext

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
	got := excerpt(text, Parse("zebra"))
	if !strings.Contains(got, "the Zebra grazes") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") {
		t.Errorf("excerpt = %q, want a one-line window around the match", got)
	}
	if got := excerpt("short text", Parse("absent")); got != "short text" {
		t.Errorf("excerpt(no match) = %q, want the start", got)
	}
	// The match is a whole word, folded as a search folds it: not the
	// "cat" inside "concatenate", and "cafe" finds "CAFÉ".
	long := "concatenate " + strings.Repeat("x ", 120) + "a cat and a CAFÉ"
	if got := excerpt(long, Parse("cat")); !strings.Contains(got, "a cat and") {
		t.Errorf("excerpt(cat) = %q, want the window around the word cat", got)
	}
	if got := excerpt(long, Parse("cafe")); !strings.Contains(got, "CAFÉ") {
		t.Errorf("excerpt(cafe) = %q, want the window around CAFÉ", got)
	}
}
