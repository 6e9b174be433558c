// Package clip is the one place that shortens text on a UTF-8 boundary:
// an excerpt of client-supplied text in an error message, a tool result
// cut to fit, a line folded to a terminal's width. Every module cuts text
// through it, so a cut never splits a character and a long or hostile
// value is never echoed whole.
package clip

import (
	"fmt"
	"unicode/utf8"
)

// Marker ends a clipped excerpt.
const Marker = "..."

// Cut returns the length of the longest prefix of s that holds at most n
// bytes and ends on a UTF-8 character boundary: len(s) when s fits, 0 when
// n <= 0. s[:Cut(s, n)] is valid UTF-8 whenever s is.
func Cut(s string, n int) int {
	if len(s) <= n {
		return len(s)
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return cut
}

// Next returns the first UTF-8 character boundary of s at or after byte i
// (len(s) when there is none): the start of a suffix that does not split a
// character.
func Next(s string, i int) int {
	i = max(i, 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return min(i, len(s))
}

// String returns s when it holds at most n bytes, else its longest prefix of
// at most n bytes that ends on a UTF-8 character boundary followed by
// [Marker]. The result is valid UTF-8 whenever s is.
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:Cut(s, n)] + Marker
}

// Middle returns s and false when it holds at most n bytes; otherwise its
// head and tail (at most n bytes together, each cut on a UTF-8 boundary)
// around a "\n[... N bytes truncated ...]\n" note naming how many bytes
// were left out, and true. It keeps both ends of a long output, where the
// command line and the final error usually are.
func Middle(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	n = max(n, 0)
	head := Cut(s, n/2)
	start := Next(s, len(s)-(n-n/2))
	return fmt.Sprintf("%s\n[... %d bytes truncated ...]\n%s", s[:head], start-head, s[start:]), true
}
