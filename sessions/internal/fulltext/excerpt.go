package fulltext

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Words splits a user's search query into plain words: runs of letters,
// digits and marks, grouped by the whitespace-separated chunk they came
// from ("e-mail" gives one group, e and mail). Everything else, search
// syntax included, is a separator. At most maxGroups groups are kept.
func Words(query string, maxGroups int) [][]string {
	var groups [][]string
	for _, chunk := range strings.Fields(query) {
		words := strings.FieldsFunc(chunk, func(r rune) bool {
			return !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.Is(unicode.Co, r))
		})
		if len(words) == 0 {
			continue
		}
		groups = append(groups, words)
		if len(groups) == maxGroups {
			break
		}
	}
	return groups
}

// excerptRadius is how much text an excerpt shows on each side of the first match, in bytes.
const excerptRadius = 100

// Excerpt returns the part of content around the first case-insensitive
// occurrence of any of words, on one line with whitespace collapsed; the
// start of content if none occurs.
func Excerpt(content string, words [][]string) string {
	lower := strings.ToLower(content)
	at := -1
	for _, g := range words {
		for _, w := range g {
			if i := strings.Index(lower, strings.ToLower(w)); i >= 0 && (at < 0 || i < at) {
				at = i
			}
		}
	}
	if at < 0 || len(lower) != len(content) { // case folding changed byte offsets: show the start
		at = 0
	}
	start, end := max(0, at-excerptRadius), min(len(content), at+excerptRadius)
	for start > 0 && !utf8.RuneStart(content[start]) {
		start--
	}
	for end < len(content) && !utf8.RuneStart(content[end]) {
		end++
	}
	out := strings.Join(strings.Fields(content[start:end]), " ")
	if start > 0 {
		out = "…" + out
	}
	if end < len(content) {
		out += "…"
	}
	return out
}
