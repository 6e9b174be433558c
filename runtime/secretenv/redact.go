package secretenv

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Redacted replaces a secret's value in text a [List.Redactor] masks.
const Redacted = "[REDACTED]"

// MinRedactLen is the shortest secret value a [List.Redactor] masks: a
// shorter one would mask ordinary text, so the redactor refuses it.
const MinRedactLen = 8

// Redactor returns a function that replaces, in a text, the value of every
// secret variable of env (in [os.Environ] form; empty values are not
// secrets), in any ASCII letter case, with [Redacted]: for text that
// leaves the process on an owner's opt-in (telemetry's captured content),
// never for what tools run with ([List.Strip] keeps secrets out of those). It refuses, naming the
// variable, when a secret value is shorter than [MinRedactLen].
func (l List) Redactor(env []string) (func(string) string, error) {
	var values []string
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || value == "" || !l.Has(name) {
			continue
		}
		secrets := []string{value}
		if isOTLPHeaders(name) {
			secrets = headerValues(value)
		}
		for _, v := range secrets {
			if len(v) < MinRedactLen {
				return nil, fmt.Errorf("secretenv: a value in %s is shorter than %d bytes and cannot be masked in text; lengthen it or unset it", name, MinRedactLen)
			}
		}
		values = append(values, secrets...)
	}
	// At one place in the text the longest secret that matches is
	// masked, so a secret that begins with another is masked whole, not
	// up to the other's end. Letters match in either case: a key
	// upper-cased reads back by lower-casing.
	for i, v := range values {
		values[i] = asciiLower(v)
	}
	slices.SortStableFunc(values, func(a, b string) int { return len(b) - len(a) })
	values = slices.Compact(values)
	var first [256]bool
	for _, v := range values {
		first[v[0]] = true
	}
	return func(text string) string {
		low := asciiLower(text) // byte for byte where text is
		var b strings.Builder
		last := 0
		for i := 0; i < len(low); {
			n := 0
			if first[low[i]] {
				for _, v := range values {
					if strings.HasPrefix(low[i:], v) {
						n = len(v)
						break
					}
				}
			}
			if n == 0 {
				i++
				continue
			}
			b.WriteString(text[last:i])
			b.WriteString(Redacted)
			i += n
			last = i
		}
		if last == 0 {
			return text
		}
		b.WriteString(text[last:])
		return b.String()
	}, nil
}

// asciiLower is s with its ASCII letters lower-cased, every other byte as
// it was (so offsets in it are offsets in s).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// isOTLPHeaders reports whether name is one of the OTLP exporter's header
// variables, whose secrets are the headers' values, not the whole list.
func isOTLPHeaders(name string) bool {
	return slices.ContainsFunc([]string{OTLPHeaders, OTLPTracesHeaders, OTLPMetricsHeaders}, func(s string) bool { return strings.EqualFold(s, name) })
}

// headerValues is the value of each key=value of an OTLP headers list, as
// written and percent-decoded (the form that reaches a collector).
func headerValues(list string) []string {
	var out []string
	for _, kv := range strings.Split(list, ",") {
		_, v, ok := strings.Cut(kv, "=")
		if v = strings.TrimSpace(v); !ok || v == "" {
			continue
		}
		out = append(out, v)
		if d, err := url.PathUnescape(v); err == nil && d != v {
			out = append(out, d)
		}
	}
	return out
}
