package schema

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ecmaSpace is the ECMA-262 WhiteSpace and LineTerminator set that \s stands
// for in JSON Schema patterns. Go's RE2 \s is only [\t\n\f\r ], which would
// let a string of no-break spaces pass a "\S" (non-blank) pattern.
const ecmaSpace = `\t\n\v\f\r\p{Zs}\x{2028}\x{2029}\x{FEFF}`

// translatePattern rewrites an ECMA-262 pattern (without flags) into an RE2
// pattern with the same meaning and returns it compiled: \s, \S and .
// follow ECMA-262. \d, \w and \b are ASCII in both dialects and pass
// through. Constructs RE2 lacks (lookaround, backreferences) and the
// ECMA-only empty classes [] and [^] are errors.
func translatePattern(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 == len(p) {
				return nil, errors.New("pattern ends with a lone backslash")
			}
			i++
			switch p[i] {
			case 's':
				if inClass {
					b.WriteString(ecmaSpace)
				} else {
					b.WriteString("[" + ecmaSpace + "]")
				}
			case 'S':
				if inClass {
					return nil, errors.New(`\S inside a character class is not supported`)
				}
				b.WriteString("[^" + ecmaSpace + "]")
			default:
				b.WriteByte('\\')
				b.WriteByte(p[i])
			}
		case c == '[' && !inClass:
			inClass = true
			b.WriteByte(c)
			if strings.HasPrefix(p[i+1:], "^") {
				b.WriteByte('^')
				i++
			}
			if strings.HasPrefix(p[i+1:], "]") {
				return nil, errors.New("empty character classes are not supported")
			}
		case c == ']' && inClass:
			inClass = false
			b.WriteByte(c)
		case c == '.' && !inClass:
			b.WriteString(`[^\n\r\x{2028}\x{2029}]`)
		default:
			b.WriteByte(c)
		}
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("pattern %q has no RE2 equivalent: %w", p, err)
	}
	return re, nil
}
