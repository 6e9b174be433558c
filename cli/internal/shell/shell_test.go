package shell

import (
	"os/exec"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/usr/local/bin/openprogram", "/usr/local/bin/openprogram"},
		{"OPENPROGRAM_HOME=/a/b:c", "OPENPROGRAM_HOME=/a/b:c"},
		{"", "''"},
		{"a b", "'a b'"},
		{"${TOKEN}", "'${TOKEN}'"},
		{"it's", `'it'\''s'`},
		{"naïve", "'naïve'"},
	} {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// A joined command line gives the shell back the words it was made of.
func TestJoinRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh on PATH: the round trip cannot be checked")
	}
	words := []string{"printf", `%s\n`, "plain", "two words", "it's", "$HOME", "`x`", "a\nb", ""}
	out, err := exec.Command(sh, "-c", Join(words)).Output()
	if err != nil {
		t.Fatalf("sh -c %s: %v", Join(words), err)
	}
	if got, want := string(out), strings.Join(words[2:], "\n")+"\n"; got != want {
		t.Errorf("sh -c %s printed %q, want %q", Join(words), got, want)
	}
}
