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
// secrets) with [Redacted]: for text that leaves the process on an owner's
// opt-in (telemetry's captured content), never for what tools run with
// ([List.Strip] keeps secrets out of those). It refuses, naming the
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
	// The replacer takes, at one place in the text, the first value in
	// its argument order that matches: the longest go first, so a secret
	// that begins with another is masked whole, not up to the other's end.
	slices.SortStableFunc(values, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, Redacted)
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace, nil
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
