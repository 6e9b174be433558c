package sessions

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

var (
	driversMu sync.RWMutex
	drivers   = map[string]func(ctx context.Context, url string) (Store, error){}
)

// Register makes a backend available to [Open] under a URL scheme
// ("sqlite", "postgres", ...), case-insensitively. Backends call it from
// init; it panics if open is nil or the scheme is registered twice.
func Register(scheme string, open func(ctx context.Context, url string) (Store, error)) {
	scheme = strings.ToLower(scheme)
	if open == nil {
		panic("sessions: Register open func is nil for scheme " + scheme)
	}
	driversMu.Lock()
	defer driversMu.Unlock()
	if _, dup := drivers[scheme]; dup {
		panic("sessions: Register called twice for scheme " + scheme)
	}
	drivers[scheme] = open
}

// Open opens the store named by url, choosing the backend by the URL's
// scheme: "sqlite:<path>", "sqlite://<path>", "postgres://...",
// "postgresql://...". The backend package must be imported (for example
// `import _ "github.com/openprogram/openprogram/sessions/sqlite"`).
// Open runs pending migrations and fails with [ErrSchemaTooNew] for a
// database written by a newer version.
func Open(ctx context.Context, url string) (Store, error) {
	scheme, _, ok := strings.Cut(url, ":")
	if !ok || scheme == "" {
		return nil, fmt.Errorf("open store: url %q has no scheme; use sqlite:<path> or a postgres:// url", redact(url))
	}
	scheme = strings.ToLower(scheme)
	driversMu.RLock()
	open := drivers[scheme]
	driversMu.RUnlock()
	if open == nil {
		return nil, fmt.Errorf("open store: no backend registered for scheme %q (registered: %s); import its package, e.g. sessions/sqlite",
			scheme, strings.Join(Schemes(), ", "))
	}
	return open(ctx, url)
}

// Schemes returns the registered URL schemes, sorted.
func Schemes() []string {
	driversMu.RLock()
	defer driversMu.RUnlock()
	out := make([]string, 0, len(drivers))
	for s := range drivers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// redact hides a password in a URL's userinfo so errors never carry it.
func redact(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	at := strings.LastIndex(rest, "@")
	slash := strings.Index(rest, "/")
	if at < 0 || (slash >= 0 && slash < at) {
		return url
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return url
	}
	return scheme + "://" + user + ":xxxxx" + rest[at:]
}
