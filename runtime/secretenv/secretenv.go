// Package secretenv says which environment variables are secrets: the one
// list every subprocess OpenProgram starts is stripped of, and the one rule
// for what an environment variable name is.
//
// The list is fixed names ([Fixed]: the MCP server token, the store URL,
// the providers' default key variables, libpq's password variables), every
// name ending in _API_KEY, and the names the configuration points at (the
// model.api_key_env variable and each ${NAME} model.headers reads), handed
// to [New] by whoever builds the tools:
//
//	list := secretenv.New(keyEnv, headerRefs...)
//	cmd.Env = list.Strip(os.Environ())
//
// It lives in the runtime module, below the CLI, so the CLI (which reads
// the configuration) and the runtime's tools (which start subprocesses)
// share it without an upward import.
package secretenv

import (
	"slices"
	"strings"

	"github.com/openprogram/openprogram/tokenauth"
)

// The fixed secret variables.
const (
	// MCPToken carries the MCP server token to `openprogram mcp serve`
	// (tokenauth's variable).
	MCPToken = tokenauth.EnvVar
	// DatabaseURL overrides the store URL, which may hold a password.
	DatabaseURL = "OPENPROGRAM_DATABASE_URL"
	// OpenAIKey is the openai provider's default key variable.
	OpenAIKey = "OPENAI_API_KEY"
	// AnthropicKey is the anthropic provider's default key variable.
	AnthropicKey = "ANTHROPIC_API_KEY"
	// PGPassword and PGPassFile are libpq's (and pgx's) password sources.
	PGPassword = "PGPASSWORD"
	PGPassFile = "PGPASSFILE"
	// OTLPHeaders, OTLPTracesHeaders and OTLPMetricsHeaders are the
	// OpenTelemetry exporter's headers, where a hosted collector's API key
	// goes (comma-separated key=value, values percent-encoded).
	OTLPHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	OTLPTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	OTLPMetricsHeaders = "OTEL_EXPORTER_OTLP_METRICS_HEADERS"
)

// Fixed returns the variables that are secrets whatever the configuration.
func Fixed() []string {
	return []string{MCPToken, DatabaseURL, OpenAIKey, AnthropicKey, PGPassword, PGPassFile, OTLPHeaders, OTLPTracesHeaders, OTLPMetricsHeaders}
}

// keySuffix marks a variable as an API key whatever its prefix.
const keySuffix = "_API_KEY"

// MaxNameLen is the longest environment variable name [ValidName] accepts.
const MaxNameLen = 128

// ValidName reports whether s names an environment variable:
// ^[A-Za-z_][A-Za-z0-9_]{0,127}$.
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameLen || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, c := range []byte(s) {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// List is a set of secret variable names. The zero List holds the fixed
// names and the _API_KEY rule, so a tool given none still strips them.
type List struct {
	extra []string
}

// New returns the fixed list plus names (the configuration's key variable
// and header references). Empty names are ignored; names are matched
// without regard to case.
func New(names ...string) List {
	var l List
	for _, n := range names {
		if n != "" && !l.Has(n) {
			l.extra = append(l.extra, n)
		}
	}
	return l
}

// Has reports whether name is a secret variable.
func (l List) Has(name string) bool {
	if strings.HasSuffix(strings.ToUpper(name), keySuffix) {
		return true
	}
	eq := func(s string) bool { return strings.EqualFold(s, name) }
	return slices.ContainsFunc(Fixed(), eq) || slices.ContainsFunc(l.extra, eq)
}

// Names returns the fixed names and the configured ones, in that order.
func (l List) Names() []string {
	return append(Fixed(), l.extra...)
}

// Strip returns env (in [os.Environ] form) without the secret variables;
// an entry without "=" is dropped too. env itself is not changed.
func (l List) Strip(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || l.Has(name) {
			continue
		}
		out = append(out, kv)
	}
	return out
}
