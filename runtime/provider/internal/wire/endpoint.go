package wire

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/sessions"
)

// Middleware is an SDK middleware; both SDKs declare theirs as this type.
type Middleware = func(*http.Request, func(*http.Request) (*http.Response, error)) (*http.Response, error)

// SDK is what [Open] needs of one provider's SDK: the provider's name and
// default base URL, and the SDK's request-option constructors (the SDKs are
// generated alike, but each has its own option type O).
type SDK[O any] struct {
	Name           string // the provider's name, first in every error
	DefaultBaseURL string
	BaseURL        func(string) O
	HTTPClient     func(*http.Client) O
	MaxRetries     func(int) O
	Middleware     func(...Middleware) O
	APIKey         func(string) O
	Header         func(key, value string) O
	// QueryAdd, when set, sends the base URL's query (Azure's
	// ?api-version=...) with every request, as the SDK would drop it when
	// it appends the path; nil leaves the base URL whole.
	QueryAdd func(key, value string) O
}

// Endpoint is an HTTP provider's [provider.Endpoint] after [Open]: the
// request options that reach it and the settings its requests carry.
type Endpoint[O any] struct {
	// BaseURL is the base URL the requests go to (without the query that
	// SDK.QueryAdd sends).
	BaseURL string
	// Options are the SDK request options: base URL, HTTP client, the SDK's
	// retries off, [ErrorMiddleware], the key when there is one, the
	// User-Agent (provider.UserAgent("") unless set) and Settings.Headers.
	Options []O
	// Settings are e's without Headers: only Options hold them, as they may
	// hold keys.
	Settings provider.Settings
}

// Open checks that e names a model and an http(s) base URL (sdk's default
// when empty) and returns the request options that reach it. Its errors
// never contain the key or the URL's credentials.
func Open[O any](sdk SDK[O], e provider.Endpoint) (Endpoint[O], error) {
	if strings.TrimSpace(e.Model) == "" {
		return Endpoint[O]{}, fmt.Errorf("%s provider: model name is empty: set model.name", sdk.Name)
	}
	base := e.BaseURL
	if base == "" {
		base = sdk.DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Endpoint[O]{}, fmt.Errorf("%s provider: base URL %q is not an http(s) URL: fix model.base_url", sdk.Name, sessions.RedactURL(base))
	}
	query := url.Values{}
	if sdk.QueryAdd != nil {
		query = u.Query()
		u.RawQuery = ""
		base = u.String()
	}
	// The providers' own client dials localhost at the loopback addresses
	// only; a caller's client may resolve it anywhere.
	pinned := e.HTTPClient == nil
	secrets := secretsOf(e)
	if secrets != "" && !e.AllowUnencryptedKey && exposed(u, pinned) {
		return Endpoint[O]{}, unencrypted(fmt.Sprintf("%s provider: refusing to send %s unencrypted (plain http://) to %s (model.base_url %s), "+
			"which is not a loopback address (localhost, 127.0.0.0/8, ::1): anyone on the network path could read it; use an https:// model.base_url, "+
			"or, if you accept that risk on a network you trust, run `openprogram config set model.allow_unencrypted_key true`",
			sdk.Name, secrets, u.Hostname(), sessions.RedactURL(base)))
	}
	hc := e.HTTPClient
	if hc == nil {
		hc = HTTPClient()
	}
	if secrets != "" && !e.AllowUnencryptedKey {
		hc = refuseExposedRedirects(hc, sdk.Name, secrets, pinned)
	}
	opts := []O{sdk.BaseURL(base), sdk.HTTPClient(hc), sdk.MaxRetries(0), sdk.Middleware(ErrorMiddleware)}
	if e.APIKey != "" {
		opts = append(opts, sdk.APIKey(e.APIKey))
	}
	for k, vs := range query {
		for _, v := range vs {
			opts = append(opts, sdk.QueryAdd(k, v))
		}
	}
	ua := e.UserAgent
	if ua == "" {
		ua = provider.UserAgent("")
	}
	opts = append(opts, sdk.Header("User-Agent", ua))
	for k, v := range e.Headers {
		opts = append(opts, sdk.Header(k, v))
	}
	set := e.Settings
	set.Headers = nil
	return Endpoint[O]{BaseURL: base, Options: opts, Settings: set}, nil
}

// unencrypted is an error that says why and how, and matches
// [provider.ErrUnencryptedKey].
type unencrypted string

func (e unencrypted) Error() string        { return string(e) }
func (e unencrypted) Is(target error) bool { return target == provider.ErrUnencryptedKey }

// secretsOf names what of e may be a secret: its key, its headers (any of
// them may carry a credential, a literal one included), both, or "" for
// neither.
func secretsOf(e provider.Endpoint) string {
	switch {
	case e.APIKey != "" && len(e.Headers) > 0:
		return "the API key and model.headers"
	case e.APIKey != "":
		return "the API key"
	case len(e.Headers) > 0:
		return "model.headers (which may carry credentials)"
	}
	return ""
}

// exposed reports whether a request to u travels unencrypted to a host
// that may not be this machine: plain http to anything but a literal
// loopback address, or the name localhost when pinned (dialled by
// HTTPClient, which never asks a resolver for it). No name a resolver
// answers for (localhost., *.localhost, 127.0.0.1.nip.io) counts as this
// machine.
func exposed(u *url.URL, pinned bool) bool {
	if !strings.EqualFold(u.Scheme, "http") {
		return false
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); ip != nil {
		return !ip.IsLoopback()
	}
	return !(pinned && strings.EqualFold(host, "localhost"))
}

// refuseExposedRedirects returns a copy of hc that refuses to follow a
// redirect to where [exposed] says the request would travel unencrypted:
// Go's client carries every header but Authorization and cookies to
// another host, and Authorization too to the same host over http. The
// refusal is an [*provider.Error] of class ClassInvalidRequest (not
// retried) wrapping [provider.ErrUnencryptedKey].
func refuseExposedRedirects(hc *http.Client, name, secrets string, pinned bool) *http.Client {
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if exposed(req.URL, pinned) {
			return &provider.Error{Class: provider.ClassInvalidRequest, Err: unencrypted(fmt.Sprintf(
				"%s provider: refusing to follow a redirect to plain http:// at %s, which is not a loopback address: it would carry %s unencrypted",
				name, req.URL.Hostname(), secrets))}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 { // http.Client's own limit
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// Model is the model req asks for, or def when it names none.
func Model(req provider.Request, def string) string {
	if req.Model != "" {
		return req.Model
	}
	return def
}

// MaxTokens is the output limit of req: its own, else s.MaxOutputTokens
// (0: neither set one).
func MaxTokens(req provider.Request, s provider.Settings) int {
	if req.MaxTokens > 0 {
		return req.MaxTokens
	}
	return max(s.MaxOutputTokens, 0)
}
