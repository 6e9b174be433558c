// Package clip cuts client-supplied text down to a short excerpt for error
// messages, on a UTF-8 boundary.
package clip

import "unicode/utf8"

// Marker ends a clipped excerpt.
const Marker = "..."

// String returns s when it holds at most n bytes, else its longest prefix of
// at most n bytes that ends on a UTF-8 character boundary followed by
// [Marker]. The result is valid UTF-8 whenever s is.
func String(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + Marker
}
