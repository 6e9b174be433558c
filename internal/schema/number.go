package schema

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// decimal is a JSON number held exactly: value = ±0.digits × 10^exp, where
// digits has no leading or trailing zeros ("" for zero, whose sign is
// ignored: -0 equals 0). Comparing two decimals never expands them, so a
// short literal with a huge exponent ("1e999999999") costs no more than any
// other.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// maxExp bounds a decimal's exponent: a literal whose exponent is larger
// in magnitude is held at the bound. No JSON value a program can use comes
// near it, and every exponent arithmetic below stays within int64.
const maxExp = 1 << 60

func (d decimal) isZero() bool { return d.digits == "" }

// isInteger reports whether d has no fractional part.
func (d decimal) isInteger() bool { return d.isZero() || d.exp >= int64(len(d.digits)) }

// number returns the decimal of v when v is a JSON number (json.Number,
// float64, or a Go integer), and false for anything else, including a
// json.Number that is not a JSON number literal and a float64 NaN or
// infinity.
func number(v any) (decimal, bool) {
	switch n := v.(type) {
	case json.Number:
		return parseDecimal(string(n))
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return decimal{}, false
		}
		// The shortest decimal that reads back as n: 0.1 is 0.1.
		return parseDecimal(strconv.FormatFloat(n, 'g', -1, 64))
	case int:
		return parseDecimal(strconv.Itoa(n))
	case int64:
		return parseDecimal(strconv.FormatInt(n, 10))
	}
	return decimal{}, false
}

// parseDecimal parses a JSON number literal: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[intStart:i]
	if intPart == "" || (len(intPart) > 1 && intPart[0] == '0') {
		return decimal{}, false
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac = s[start:i]
		if frac == "" {
			return decimal{}, false
		}
	}
	var e int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			neg = s[i] == '-'
			i++
		}
		start := i
		for ; i < len(s) && isDigit(s[i]); i++ {
			if e < maxExp {
				e = e*10 + int64(s[i]-'0')
			}
		}
		if i == start {
			return decimal{}, false
		}
		e = min(e, maxExp)
		if neg {
			e = -e
		}
	}
	if i != len(s) {
		return decimal{}, false
	}
	point := int64(len(intPart))
	digits := intPart + frac
	trimmed := strings.TrimLeft(digits, "0")
	point -= int64(len(digits) - len(trimmed))
	d.digits = strings.TrimRight(trimmed, "0")
	if d.digits == "" {
		return decimal{}, true
	}
	d.exp = max(-maxExp, min(maxExp, point+e))
	return d, true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// cmp returns -1, 0 or +1 as a is less than, equal to or greater than b.
func (a decimal) cmp(b decimal) int {
	sa, sb := a.sign(), b.sign()
	if sa != sb {
		if sa < sb {
			return -1
		}
		return 1
	}
	if sa == 0 {
		return 0
	}
	m := cmpMagnitude(a, b)
	if sa < 0 {
		return -m
	}
	return m
}

func (d decimal) sign() int {
	switch {
	case d.isZero():
		return 0
	case d.neg:
		return -1
	}
	return 1
}

// cmpMagnitude compares |a| and |b|, both non-zero.
func cmpMagnitude(a, b decimal) int {
	if a.exp != b.exp {
		if a.exp < b.exp {
			return -1
		}
		return 1
	}
	// Same exponent: 0.digits compare as strings, since neither has
	// leading or trailing zeros.
	return strings.Compare(a.digits, b.digits)
}

// multipleOf reports whether a is an integer multiple of m (m > 0), exactly.
func (a decimal) multipleOf(m decimal) bool {
	if a.isZero() {
		return true
	}
	// a = A × 10^(a.exp-len(A)), m = M × 10^(m.exp-len(M)), so
	// a/m = A/M × 10^k.
	k := (a.exp - int64(len(a.digits))) - (m.exp - int64(len(m.digits)))
	A, _ := new(big.Int).SetString(a.digits, 10)
	M, _ := new(big.Int).SetString(m.digits, 10)
	if k >= 0 {
		// M divides A × 10^k: (A mod M) × (10^k mod M) ≡ 0 (mod M).
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(k), M)
		p.Mul(p, A)
		return p.Mod(p, M).Sign() == 0
	}
	// M × 10^-k divides A; A < 10^len(A), so a divisor of 10^-k or more
	// cannot divide it.
	if -k >= int64(len(a.digits)) {
		return false
	}
	div := new(big.Int).Exp(big.NewInt(10), big.NewInt(-k), nil)
	div.Mul(div, M)
	return new(big.Int).Mod(A, div).Sign() == 0
}

// key appends a canonical form of d to b: equal numbers (1, 1.0, 1e0, 10e-1)
// have equal keys.
func (d decimal) key(b *strings.Builder) {
	if d.isZero() {
		b.WriteString("0;")
		return
	}
	if d.neg {
		b.WriteByte('-')
	}
	b.WriteString(d.digits)
	b.WriteByte('e')
	b.WriteString(strconv.FormatInt(d.exp, 10))
	b.WriteByte(';')
}

// nonNegativeInt returns d as an int64 when d is a non-negative integer,
// holding values beyond the int64 range at math.MaxInt64.
func (d decimal) nonNegativeInt() (int64, bool) {
	if d.neg && !d.isZero() || !d.isInteger() {
		return 0, false
	}
	if d.isZero() {
		return 0, true
	}
	if d.exp > 18 {
		return math.MaxInt64, true
	}
	n, err := strconv.ParseInt(d.digits+strings.Repeat("0", int(d.exp)-len(d.digits)), 10, 64)
	if err != nil {
		return math.MaxInt64, true
	}
	return n, true
}
