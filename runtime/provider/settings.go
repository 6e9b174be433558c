package provider

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/openprogram/openprogram/internal/shell"
	"github.com/openprogram/openprogram/runtime/secretenv"
)

// reservedHeaders are set by the HTTP client itself; a configured value
// would corrupt the request's framing.
var reservedHeaders = []string{"Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection"}

// CheckHeader reports whether name and value can be sent as an extra request
// header: name an HTTP token that the client does not set itself, value
// without control characters (a tab aside). value may still hold ${NAME}
// references.
func CheckHeader(name, value string) error {
	if name == "" {
		return errors.New("header name is empty")
	}
	for i := 0; i < len(name); i++ {
		if !isTokenByte(name[i]) {
			return fmt.Errorf("header name %q is not an HTTP token (letters, digits, -, _ and !#$%%&'*+.^`|~)", name)
		}
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(name, r) {
			return fmt.Errorf("header %s is set by the HTTP client and cannot be configured", r)
		}
	}
	if hasControl(value) {
		return fmt.Errorf("value of header %s holds a control character", name)
	}
	if _, err := expand(value, func(string) (string, bool) { return "x", true }); err != nil {
		return fmt.Errorf("value of header %s: %w", name, err)
	}
	return nil
}

func hasControl(s string) bool {
	for _, c := range []byte(s) {
		if (c < ' ' && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// ExpandHeaders checks every header with [CheckHeader] and returns a copy
// with each ${NAME} in a value replaced by that environment variable, read
// through lookup. A variable that is unset or empty is an error naming it
// (never its value), and so is a reference to [secretenv.MCPToken], the MCP
// server token, which never reaches a model endpoint. A "$" not
// followed by "{" is kept as it is.
func ExpandHeaders(headers map[string]string, lookup func(string) string) (map[string]string, error) {
	if len(headers) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(headers))
	for name, value := range headers {
		if err := CheckHeader(name, value); err != nil {
			return nil, err
		}
		v, err := expand(value, func(env string) (string, bool) {
			s := lookup(env)
			return s, s != ""
		})
		if err != nil {
			return nil, fmt.Errorf("value of header %s: %w", name, err)
		}
		if hasControl(v) {
			return nil, fmt.Errorf("value of header %s: an expanded variable holds a control character", name)
		}
		out[name] = v
	}
	return out, nil
}

// HeaderEnvNames returns the variables named by the ${NAME} references in
// the header values, sorted, without duplicates; a value [CheckHeader] refuses
// contributes the names before its first fault. They are secrets: whoever
// starts a subprocess strips them ([secretenv.List]).
func HeaderEnvNames(headers map[string]string) []string {
	seen := map[string]bool{}
	for _, value := range headers {
		_, _ = expand(value, func(env string) (string, bool) {
			seen[env] = true
			return "", true
		})
	}
	return slices.Sorted(maps.Keys(seen))
}

// expand replaces each ${NAME} in s with lookup(NAME).
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", errors.New(`"${" without a closing "}": write ${NAME}`)
		}
		env := s[i+2 : i+end]
		if !secretenv.ValidName(env) {
			return "", fmt.Errorf("${%s} does not name an environment variable (letters, digits, _)", env)
		}
		if env == secretenv.MCPToken {
			return "", fmt.Errorf("${%s} is the MCP server token, which is never sent to a model endpoint", env)
		}
		v, ok := lookup(env)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set: %s before starting openprogram", env, shell.Native.Export(env, shell.Native.Literal("<value>")))
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}
