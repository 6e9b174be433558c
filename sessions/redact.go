package sessions

import (
	"net/url"
	"regexp"
	"strings"
)

// redactMask replaces a secret in a redacted URL.
const redactMask = "xxxxx"

// RedactURL returns u fit to show: in a URL that parses, the userinfo
// password and the value of every password-like query parameter (a key
// holding "password", "passwd", "pwd", "secret", "token" or "key", in any
// case) are replaced by "xxxxx". In a URL that does not parse, everything
// between "://" and the last "@" (the credentials part) and the whole query
// are replaced, and in a keyword/value connection string
// ("host=h password=p") each password-like value is. It is the one
// redaction of store and endpoint URLs: configuration listings, logs,
// doctor and every error that quotes a URL go through it.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	switch {
	case err != nil:
		return redactUnparsed(u)
	case p.Scheme == "" && p.User == nil:
		return redactKeywords(u)
	}
	if _, has := p.User.Password(); has {
		p.User = url.UserPassword(p.User.Username(), redactMask)
	}
	if at := strings.LastIndex(p.Opaque, "@"); at >= 0 { // scheme:user:pass@host
		p.Opaque = redactMask + p.Opaque[at:]
	}
	p.RawQuery = redactQuery(p.RawQuery)
	return p.String()
}

// redactUnparsed masks the credentials part and the query of a URL that
// does not parse: its component boundaries are uncertain, so all of them.
func redactUnparsed(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		scheme, rest = "", u
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = redactMask + rest[at:]
	}
	if q := strings.IndexByte(rest, '?'); q >= 0 {
		rest = rest[:q+1] + redactMask
	}
	if ok {
		return scheme + "://" + rest
	}
	return redactKeywords(rest)
}

// secretWords are the words that make a query or connection-string key a
// secret's.
const secretWords = `password|passwd|pwd|secret|token|key`

// secretParam matches a key that names a secret.
var secretParam = regexp.MustCompile(`(?i)` + secretWords)

// redactQuery masks the secret values of a raw query, keeping the rest of
// it byte for byte.
func redactQuery(raw string) string {
	if raw == "" {
		return raw
	}
	parts := strings.Split(raw, "&")
	for i, part := range parts {
		k, _, _ := strings.Cut(part, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		if secretParam.MatchString(k) {
			parts[i] = k + "=" + redactMask
		}
	}
	return strings.Join(parts, "&")
}

// secretKeyword matches a password-like key=value pair of a keyword/value
// connection string, the value bare or single-quoted.
var secretKeyword = regexp.MustCompile(`(?i)([a-z_]*(?:` + secretWords + `)[a-z_]*)\s*=\s*(?:'(?:[^'\\]|\\.)*'?|\S*)`)

// redactKeywords masks the secret values of a keyword/value connection
// string ("host=h password='p q'"), keeping the rest.
func redactKeywords(s string) string {
	return secretKeyword.ReplaceAllString(s, "${1}="+redactMask)
}
