// Package grep finds the lines of a memory document that contain a
// substring, the same way for every backend.
package grep

import (
	"strings"
	"unicode/utf8"

	"github.com/openprogram/openprogram/internal/clip"
)

// MaxSnippet is the longest snippet returned, in bytes (cut on a rune boundary).
const MaxSnippet = 400

// ASCII reports whether s is all ASCII: a case-insensitive needle that a
// database's lower() folds as Go does whatever its locale, so the database
// may narrow by it.
func ASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Matcher matches lines against one substring.
type Matcher struct {
	sub           string
	caseSensitive bool
}

// New returns a matcher for sub. Case-insensitive matching folds with
// strings.ToLower, so it covers Unicode letters.
func New(sub string, caseSensitive bool) Matcher {
	if !caseSensitive {
		sub = strings.ToLower(sub)
	}
	return Matcher{sub: sub, caseSensitive: caseSensitive}
}

// Lines calls fn with the 1-based number and snippet of every line of
// content that contains the substring, until fn returns false.
func (m Matcher) Lines(content string, fn func(line int, snippet string) bool) {
	if m.sub == "" {
		return
	}
	n := 0
	for line := range strings.Lines(content) {
		n++
		line = strings.TrimRight(line, "\r\n")
		hay := line
		if !m.caseSensitive {
			hay = strings.ToLower(line)
		}
		if strings.Contains(hay, m.sub) && !fn(n, Snippet(line)) {
			return
		}
	}
}

// Snippet cuts s to at most MaxSnippet bytes on a rune boundary.
func Snippet(s string) string {
	if len(s) <= MaxSnippet {
		return s
	}
	return s[:clip.Cut(s, MaxSnippet)] + "…"
}
