package sessions

import (
	"strings"
	"unicode"
)

// TitleMaxRunes is the longest title [Title] derives, in runes.
const TitleMaxRunes = 60

// Title is the one rule for a new session's title: the first line of what
// its creator said, runs of white space collapsed to one space, at most
// [TitleMaxRunes] runes (a longer line is cut and ends in "…"). A line with
// nothing to show gives fallback. MCP's prompt_send and the owner's console
// both title their sessions with it.
func Title(text, fallback string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.Join(strings.FieldsFunc(line, unicode.IsSpace), " ")
	if line == "" {
		return fallback
	}
	if r := []rune(line); len(r) > TitleMaxRunes {
		return strings.TrimSpace(string(r[:TitleMaxRunes-1])) + "…"
	}
	return line
}
