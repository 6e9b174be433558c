// Package shell writes words for the shell people paste into: the commands
// and fixes the openprogram command prints (`chmod 600 <path>`,
// `claude mcp add ...`, the line that sets the MCP token in a client's
// environment) and the words of its completion scripts, quoted only where
// the shell needs it. [POSIX] is sh, bash, zsh; [PowerShell] is Windows'
// shell; [Native] is the one of this system, which the printed hints use.
package shell

import "strings"

// Syntax is one shell's syntax.
type Syntax int

const (
	// POSIX is the syntax of sh, bash and zsh.
	POSIX Syntax = iota
	// PowerShell is the syntax of Windows PowerShell and pwsh.
	PowerShell
)

// plain reports whether s is a word both shells take as it is: letters,
// digits and / - _ . = : (and \ for PowerShell, where it separates a path).
// PowerShell reads a bare word that starts with - as a parameter name and
// breaks it in two at its first . (at its first : too after --), even as a
// program's argument: such a word is quoted there.
func (sx Syntax) plain(s string) bool {
	if sx == PowerShell && strings.HasPrefix(s, "-") && strings.ContainsAny(s, ".:") {
		return false
	}
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '-' || r == '_' || r == '.' || r == '=' || r == ':' ||
			(r == '\\' && sx == PowerShell) ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0
}

// psQuotes are the characters PowerShell ends a single-quoted string at:
// the apostrophe and the typographic single quotes; a quote inside one is
// written twice.
var psQuotes = strings.NewReplacer("'", "''", "\u2018", "\u2018\u2018", "\u2019", "\u2019\u2019",
	"\u201a", "\u201a\u201a", "\u201b", "\u201b\u201b")

// Quote quotes s as one word when it needs quoting: a plain word stays as
// it is, anything else goes in single quotes (POSIX: an inner ' as '\”;
// PowerShell: inner quotes doubled), inside which neither shell expands
// anything ($, `, \).
func (sx Syntax) Quote(s string) string {
	if sx.plain(s) {
		return s
	}
	return sx.Literal(s)
}

// Literal is s in single quotes, even a plain word: PowerShell takes a
// bare word in an expression (an array, a hash table) for a command.
func (sx Syntax) Literal(s string) string {
	if sx == PowerShell {
		return "'" + psQuotes.Replace(s) + "'"
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join renders argv as one command line, each word quoted as it needs. In
// PowerShell a quoted program name is a string, not a command: it is run
// with the call operator (& 'C:\Program Files\x.exe' ...).
func (sx Syntax) Join(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = sx.Quote(a)
	}
	line := strings.Join(quoted, " ")
	if sx == PowerShell && len(argv) > 0 && !sx.plain(argv[0]) {
		line = "& " + line
	}
	return line
}

// Export is the statement that sets the environment variable name to the
// value expr (already in this syntax: quoted, or an expression such as
// [Syntax.FileContent]) for the commands this shell starts.
func (sx Syntax) Export(name, expr string) string {
	if sx == PowerShell {
		return "$env:" + name + " = " + expr
	}
	return "export " + name + "=" + expr
}

// FileContent is the expression whose value is the content of the file
// at path, without the line ends around it. path is an expression of this
// syntax: a quoted word or a [Syntax.Output].
func (sx Syntax) FileContent(path string) string {
	if sx == PowerShell {
		return "(Get-Content -Raw -LiteralPath " + path + ").Trim()"
	}
	return `"$(cat ` + path + `)"`
}

// Output is the expression whose value is what the command argv prints.
func (sx Syntax) Output(argv []string) string {
	if sx == PowerShell {
		return "(" + sx.Join(argv) + ")"
	}
	return `"$(` + sx.Join(argv) + `)"`
}
