package authz

import "strings"

// normaliseCommand trims a shell command and collapses every run of blanks (the
// characters the shell splits words on: space, tab, newline, carriage return) to one
// space. It is only used to match rules; the command itself is never changed.
func normaliseCommand(cmd string) string {
	return strings.Join(shellWords(cmd), " ")
}

func shellWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

// hasShellOperator reports whether cmd can run more than one command or touch files
// through the shell: ; & | ` < > $( or a line break.
func hasShellOperator(cmd string) bool {
	return strings.ContainsAny(cmd, ";&|`<>\n\r") || strings.Contains(cmd, "$(")
}

// shellWrappers run their arguments as a command; deny and ask rules also see the
// command without them.
var shellWrappers = map[string]bool{
	"sudo": true, "env": true, "command": true, "builtin": true, "exec": true,
	"nohup": true, "time": true, "nice": true, "!": true, "{": true, "}": true,
	"then": true, "else": true, "do": true, "if": true, "while": true, "until": true,
	"xargs": true, "doas": true,
}

// commandSegments splits cmd at every shell operator and grouping character and returns
// each non-empty piece normalised, plus that piece with leading variable assignments and
// wrapper words (sudo, env, nohup, ...) removed. It over-splits quoted text on purpose:
// segments only widen what deny and ask rules see.
func commandSegments(cmd string) []string {
	pieces := strings.FieldsFunc(cmd, func(r rune) bool {
		return strings.ContainsRune(";&|`<>()\n\r$", r)
	})
	var out []string
	seen := map[string]bool{}
	push := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, p := range pieces {
		words := shellWords(p)
		push(strings.Join(words, " "))
		for len(words) > 0 && (shellWrappers[commandForm(words[0])] || isAssignment(words[0]) || strings.HasPrefix(words[0], "-")) {
			words = words[1:]
			push(strings.Join(words, " "))
		}
	}
	return out
}

// isAssignment reports whether w looks like NAME=value.
func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	for j, r := range w[:i] {
		if r != '_' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (j == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
