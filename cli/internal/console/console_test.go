package console

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrintableDropsControlCharacters(t *testing.T) {
	cases := map[string]string{
		"plain text\nnext\tline":  "plain text\nnext\tline",
		"red \x1b[31mtext\x1b[0m": "red [31mtext[0m",
		"bell\a and \r return":    "bell and  return",
		"bad \xff byte":           "bad \uFFFD byte",
		"héllo":                   "héllo",
	}
	for in, want := range cases {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFoldArgs(t *testing.T) {
	long := strings.Repeat("x", 300)
	got := FoldArgs(`{"path":"a.txt","content":"`+long+`","n":1, "esc":"\u001b<b>"}`, 20)
	want := []string{
		`content: "xxxxxxxxxxxxxxxxxxx… (282 more bytes)`,
		`esc: "\u001b<b>"`,
		`n: 1`,
		`path: "a.txt"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FoldArgs (-want +got):\n%s", diff)
	}
	if got := FoldArgs(`[1,2,3]`, 3); !cmp.Equal(got, []string{"[1,… (4 more bytes)"}) {
		t.Errorf("FoldArgs(array) = %q", got)
	}
}

func TestStyleIsPlainWithoutColor(t *testing.T) {
	s := Style{}
	if got := s.Warn("x") + s.Dim("y") + s.Bold("z") + s.Err("w"); got != "xyzw" {
		t.Errorf("plain style = %q, want no escape codes", got)
	}
	if got := (Style{Color: true}).Dim("y"); got != "\x1b[2my\x1b[0m" {
		t.Errorf("colour style = %q", got)
	}
}

func TestEOFAsCtrlD(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
	}{
		{"abc", "abc"},
		{"\x00", "\x04"},
		{"a\x00b", "a\x04b"},
		{"", "\x04"}, // a read of zero bytes at the end of input
	} {
		r := eofAsCtrlD{strings.NewReader(c.in)}
		buf := make([]byte, 16)
		n, err := r.Read(buf)
		if err != nil || string(buf[:n]) != c.want {
			t.Errorf("Read(%q) = %q, %v; want %q", c.in, buf[:n], err, c.want)
		}
	}
}
