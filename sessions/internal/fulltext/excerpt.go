package fulltext

import (
	"strings"

	"github.com/openprogram/openprogram/internal/clip"
)

// Words splits a user's search query into plain words: runs of letters,
// digits and marks, grouped by the whitespace-separated chunk they came
// from ("e-mail" gives one group, e and mail). Everything else, search
// syntax included, is a separator. At most maxGroups groups are kept.
func Words(query string, maxGroups int) [][]string {
	var groups [][]string
	for _, chunk := range strings.Fields(query) {
		words := strings.FieldsFunc(chunk, func(r rune) bool { return !isWord(r) })
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

// excerpt returns the part of content around the first word that is one
// of q's words (folded alike), on one line with whitespace collapsed; the
// start of content if none is.
func excerpt(content string, q Query) string {
	at := 0
	eachWord(content, false, func(w []byte, start int) bool {
		if _, ok := q.words[string(w)]; ok {
			at = start
			return false
		}
		return true
	})
	start := clip.Cut(content, max(0, at-excerptRadius))
	end := clip.Next(content, at+excerptRadius)
	out := strings.Join(strings.Fields(content[start:end]), " ")
	if start > 0 {
		out = "…" + out
	}
	if end < len(content) {
		out += "…"
	}
	return out
}
