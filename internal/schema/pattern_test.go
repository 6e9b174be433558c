package schema

import "testing"

func TestTranslatePattern(t *testing.T) {
	tests := []struct {
		pattern string
		match   []string
		noMatch []string
	}{
		{`\S`, []string{"a", " a", "\u0085", "\u200b"}, []string{"", " ", "\t\n\v\f\r", "\u00a0", "\u1680", "\u2000\u200a", "\u2028\u2029", "\u202f\u205f\u3000", "\ufeff"}},
		{`^\s+$`, []string{" ", "\u00a0\v", "\ufeff"}, []string{"", "a", " a"}},
		{`^[\sx]+$`, []string{"x x", "\u3000x"}, []string{"y"}},
		{`^a.b$`, []string{"axb", "a\u00a0b"}, []string{"a\nb", "a\rb", "a\u2028b", "ab"}},
		{`^[.]$`, []string{"."}, []string{"x"}},
		{`^\d+\.\w$`, []string{"12.a"}, []string{"١٢.a", "12x"}},
		{`^[^a]$`, []string{"b"}, []string{"a"}},
		{`\\S`, []string{`\S`}, []string{"x"}},
	}
	for _, tt := range tests {
		re, err := translatePattern(tt.pattern)
		if err != nil {
			t.Errorf("translatePattern(%q) error: %v", tt.pattern, err)
			continue
		}
		re2 := re.String()
		for _, s := range tt.match {
			if !re.MatchString(s) {
				t.Errorf("pattern %q (RE2 %q) does not match %q, want a match", tt.pattern, re2, s)
			}
		}
		for _, s := range tt.noMatch {
			if re.MatchString(s) {
				t.Errorf("pattern %q (RE2 %q) matches %q, want no match", tt.pattern, re2, s)
			}
		}
	}
}

func TestTranslatePatternErrors(t *testing.T) {
	for _, p := range []string{`a\`, `[\S]`, `[]`, `[^]`, `(?=a)`, `(a)\1`, `[a`} {
		if got, err := translatePattern(p); err == nil {
			t.Errorf("translatePattern(%q) = %q, want an error", p, got)
		}
	}
}
