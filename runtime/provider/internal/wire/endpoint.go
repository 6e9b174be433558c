package wire

import (
	"fmt"
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
	hc := e.HTTPClient
	if hc == nil {
		hc = HTTPClient()
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
