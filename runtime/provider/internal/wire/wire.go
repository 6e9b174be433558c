// Package wire holds what the HTTP providers share: the checking of their
// options and the SDK request options they make (Open), the plumbing of a
// streamed request and the gathering of its reply (Stream, Reply), error
// classification, Retry-After parsing and the HTTP client they default to.
package wire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/openprogram/openprogram/runtime/provider"
)

// Body is what an error response (or an error event inside a stream) says
// about itself: the error's type, code and message, whichever were present.
type Body struct {
	Type, Code, Message string
}

// ParseBody reads {"error":{"type","code","message"}} or a bare
// {"type","code","message"} object; anything else yields the zero Body.
func ParseBody(data []byte) Body {
	type inner struct {
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	var outer struct {
		Error json.RawMessage `json:"error"`
		inner
	}
	if json.Unmarshal(data, &outer) != nil {
		return Body{}
	}
	in := outer.inner
	if len(outer.Error) > 0 {
		var nested inner
		if json.Unmarshal(outer.Error, &nested) == nil {
			in = nested
		} else {
			var s string
			if json.Unmarshal(outer.Error, &s) == nil {
				in = inner{Message: s}
			}
		}
	}
	b := Body{Type: in.Type, Message: in.Message}
	if b.Message == "" && len(outer.Detail) > 0 {
		// FastAPI-based servers answer {"detail": "..."}.
		var s string
		if json.Unmarshal(outer.Detail, &s) == nil {
			b.Message = s
		}
	}
	// Codes are strings at OpenAI and numbers at some compatible servers.
	var code string
	if json.Unmarshal(in.Code, &code) == nil {
		b.Code = code
	} else if len(in.Code) > 0 && string(in.Code) != "null" {
		b.Code = string(in.Code)
	}
	return b
}

// Classify returns the class of a failure from its HTTP status (0 for an
// error that arrived inside a 200 stream) and what its body said.
func Classify(status int, b Body) provider.Class {
	kind := strings.ToLower(b.Type + " " + b.Code)
	switch {
	case isContextLength(b):
		return provider.ClassContextLength
	case strings.Contains(kind, "insufficient_quota"), strings.Contains(kind, "billing"):
		return provider.ClassAuth
	case strings.Contains(kind, "rate_limit"):
		return provider.ClassRateLimit
	case strings.Contains(kind, "overloaded"):
		return provider.ClassServer
	}
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusPaymentRequired:
		return provider.ClassAuth
	case status == http.StatusTooManyRequests:
		return provider.ClassRateLimit
	case status == http.StatusRequestEntityTooLarge:
		return provider.ClassContextLength
	case status == http.StatusRequestTimeout, status == http.StatusConflict, status >= 500:
		return provider.ClassServer
	case status >= 400:
		return provider.ClassInvalidRequest
	}
	// An error event inside a stream, classified by its type alone.
	switch {
	case strings.Contains(kind, "authentication"), strings.Contains(kind, "permission"):
		return provider.ClassAuth
	case strings.Contains(kind, "invalid_request"), strings.Contains(kind, "not_found"):
		return provider.ClassInvalidRequest
	}
	return provider.ClassServer
}

// contextLengthCodes are the error codes and types APIs use for a request
// that does not fit the model's context: matched exactly (case folded),
// before anything else.
var contextLengthCodes = []struct{ code, source string }{
	{"context_length_exceeded", "OpenAI API error codes: error.code of a 400 (also OpenRouter, Azure OpenAI)"},
	{"exceed_context_size_error", "llama.cpp server: error.type when the prompt exceeds the slot's context size"},
}

// contextLengthPhrases are for APIs that say it only in the message: a
// phrase match is unavoidable there, so each phrase names where it comes
// from. Nothing else in the package reads a provider's English.
var contextLengthPhrases = []struct{ phrase, source string }{
	{"prompt is too long", "Anthropic Messages API: a 400 invalid_request_error whose message reads \"prompt is too long: N tokens > M maximum\""},
	{"maximum context length", "OpenAI-compatible servers (vLLM, LM Studio, older OpenAI models): \"This model's maximum context length is N tokens\""},
}

// isContextLength reports whether b says the request does not fit the
// model's context: by its code or type first, then by the phrase table.
func isContextLength(b Body) bool {
	for _, c := range contextLengthCodes {
		if strings.EqualFold(b.Code, c.code) || strings.EqualFold(b.Type, c.code) {
			return true
		}
	}
	m := strings.ToLower(b.Message)
	for _, p := range contextLengthPhrases {
		if strings.Contains(m, p.phrase) {
			return true
		}
	}
	return false
}

// RetryAfter returns the wait a response asks for in retry-after-ms or
// Retry-After (seconds or an HTTP date), or 0 when it asks for none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// HTTPError builds the classified error of a failed HTTP response.
func HTTPError(status int, h http.Header, body []byte) *provider.Error {
	b := ParseBody(body)
	msg := b.Message
	if msg == "" || status == http.StatusUnauthorized || status == http.StatusForbidden {
		// Servers echo (part of) a rejected key in their message: drop it.
		msg = http.StatusText(status)
	}
	if b.Code != "" {
		msg += " [" + b.Code + "]"
	}
	e := &provider.Error{Class: Classify(status, b), Status: status, Err: errors.New(msg)}
	if e.Class == provider.ClassRateLimit || e.Class == provider.ClassServer {
		e.RetryAfter = RetryAfter(h, time.Now())
	}
	return e
}

// EventError builds the classified error of an error event inside a stream,
// from what it said and its HTTP status (0 when it had none).
func EventError(status int, b Body) *provider.Error {
	msg := b.Message
	if msg == "" {
		msg = "error event in the stream"
	}
	return &provider.Error{Class: Classify(status, b), Status: status, Err: errors.New(msg)}
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// ErrorMiddleware is an SDK middleware that turns every HTTP error response
// into a classified [*provider.Error] before the SDK sees it, so both SDKs
// report failures the same way, whatever body the server sent.
func ErrorMiddleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.StatusCode < 400 {
		return res, err
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	_ = res.Body.Close()
	return nil, HTTPError(res.StatusCode, res.Header, body)
}

// TransportError classifies a failure that is not an HTTP error response:
// the caller's cancellation, a network failure, or a reply that could not be
// parsed.
func TransportError(ctx context.Context, err error) *provider.Error {
	if ctx.Err() != nil {
		return provider.Cancelled(ctx)
	}
	if pe, ok := errors.AsType[*provider.Error](err); ok {
		return pe
	}
	var (
		netErr    net.Error
		urlErr    *url.Error
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntaxErr), errors.As(err, &typeErr):
		return &provider.Error{Class: provider.ClassInvalidRequest, Err: err}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.As(err, &netErr), errors.As(err, &urlErr):
		return &provider.Error{Class: provider.ClassNetwork, Err: err}
	}
	return &provider.Error{Class: provider.ClassServer, Err: err}
}

// HTTPClient returns the client the providers use by default: no overall
// timeout (a reply streams for as long as it takes; the context bounds it),
// but bounded dialing and TLS handshakes, and no proxy surprises beyond the
// standard environment.
//
// It dials the name localhost at 127.0.0.1, then ::1, never asking a
// resolver (RFC 6761 lets applications do so): a DNS answer or a hosts
// file cannot send a request meant for this machine elsewhere, which is
// what lets [Open] treat localhost as loopback. (Requests to loopback
// hosts never go through the environment's proxy.)
func HTTPClient() *http.Client {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			pinned := localhostAddrs(addr)
			if pinned == nil {
				return d.DialContext(ctx, network, addr)
			}
			var first error
			for _, a := range pinned {
				c, err := d.DialContext(ctx, network, a)
				if err == nil {
					return c, nil
				}
				if first == nil {
					first = err
				}
			}
			return nil, first
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
	}}
}

// localhostAddrs returns the loopback addresses HTTPClient dials for addr
// (host:port) when its host is the name localhost, and nil otherwise.
func localhostAddrs(addr string) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !strings.EqualFold(host, "localhost") {
		return nil
	}
	return []string{net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)}
}

// IsLoopback reports whether rawURL names a loopback host (localhost,
// 127.0.0.0/8, ::1), where local model servers run without a key.
func IsLoopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Idle bounds the silence of one request (see provider.Settings.Timeout):
// its context ends with a [provider.ClassTimeout] error as its cause once
// the timeout passes without a call to Touch.
type Idle struct {
	d      time.Duration
	timer  *time.Timer
	cancel context.CancelCauseFunc
}

// StartIdle returns a context for one request bounded by an idle timeout of
// d (none when d <= 0), and the Idle that rearms it. Stop must be called
// when the request is over.
func StartIdle(ctx context.Context, d time.Duration) (context.Context, *Idle) {
	ctx, cancel := context.WithCancelCause(ctx)
	i := &Idle{d: d, cancel: cancel}
	if d > 0 {
		i.timer = time.AfterFunc(d, func() {
			cancel(&provider.Error{Class: provider.ClassTimeout, Err: fmt.Errorf(
				"the model server sent nothing for %s (raise model.timeout if it is slow to start)", d)})
		})
	}
	return ctx, i
}

// Touch rearms the timer: the server just sent something.
func (i *Idle) Touch() {
	if i.timer != nil {
		i.timer.Reset(i.d)
	}
}

// Stop ends the timer and the request's context.
func (i *Idle) Stop() {
	if i.timer != nil {
		i.timer.Stop()
	}
	i.cancel(nil)
}
