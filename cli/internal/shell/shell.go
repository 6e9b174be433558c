// Package shell writes words for a POSIX shell: the commands and fixes the
// openprogram command prints for people to paste (`chmod 600 <path>`,
// `claude mcp add ...`) and the words of its completion scripts, quoted only
// where the shell needs it.
package shell

import "strings"

// Quote quotes s for a POSIX shell when it needs quoting: a word of
// letters, digits and / - _ . = : stays as it is, anything else goes in
// single quotes.
func Quote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '-' || r == '_' || r == '.' || r == '=' || r == ':' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join renders argv as one command line, each word quoted as it needs.
func Join(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = Quote(a)
	}
	return strings.Join(quoted, " ")
}
