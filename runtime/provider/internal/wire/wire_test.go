package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/runtime/provider"
)

var bodyTests = []struct {
	in   string
	want Body
}{
	{`{"error":{"message":"m","type":"t","code":"c"}}`, Body{Type: "t", Code: "c", Message: "m"}},
	{`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, Body{Type: "overloaded_error", Message: "Overloaded"}},
	{`{"object":"error","message":"m","type":"BadRequestError","code":400}`, Body{Type: "BadRequestError", Code: "400", Message: "m"}},
	{`{"error":"model \"x\" not found"}`, Body{Message: `model "x" not found`}},
	{`{"detail":"Not Found"}`, Body{Message: "Not Found"}},
	{`{"error":{"message":"m","code":null}}`, Body{Message: "m"}},
	{`upstream connect error`, Body{}},
	{``, Body{}},
	{`[]`, Body{}},
}

func TestParseBody(t *testing.T) {
	for _, tt := range bodyTests {
		if got := ParseBody([]byte(tt.in)); got != tt.want {
			t.Errorf("ParseBody(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

func FuzzParseBody(f *testing.F) {
	for _, tt := range bodyTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := ParseBody(data)
		_ = Classify(400, b)
		_ = Classify(0, b)
	})
}

func TestClassify(t *testing.T) {
	tests := []struct {
		status int
		body   Body
		want   provider.Class
	}{
		{401, Body{Type: "invalid_request_error", Code: "invalid_api_key"}, provider.ClassAuth},
		{403, Body{Type: "permission_error"}, provider.ClassAuth},
		{402, Body{Type: "billing_error"}, provider.ClassAuth},
		{429, Body{Code: "rate_limit_exceeded"}, provider.ClassRateLimit},
		{429, Body{Type: "insufficient_quota", Code: "insufficient_quota"}, provider.ClassAuth},
		{429, Body{}, provider.ClassRateLimit},
		{400, Body{Code: "context_length_exceeded"}, provider.ClassContextLength},
		{400, Body{Type: "invalid_request_error", Message: "prompt is too long: 210843 tokens > 200000 maximum"}, provider.ClassContextLength},
		{400, Body{Message: "This model's maximum context length is 4096 tokens."}, provider.ClassContextLength},
		{413, Body{Type: "request_too_large"}, provider.ClassContextLength},
		{400, Body{Type: "exceed_context_size_error", Message: "the request exceeds the available context size"}, provider.ClassContextLength},
		{400, Body{Code: "CONTEXT_LENGTH_EXCEEDED"}, provider.ClassContextLength},
		// A message that merely mentions context is not enough.
		{400, Body{Type: "invalid_request_error", Message: "the context window field is unknown"}, provider.ClassInvalidRequest},
		{400, Body{Type: "invalid_request_error", Message: "messages: roles must alternate"}, provider.ClassInvalidRequest},
		{404, Body{Code: "model_not_found"}, provider.ClassInvalidRequest},
		{422, Body{}, provider.ClassInvalidRequest},
		{408, Body{}, provider.ClassServer},
		{409, Body{}, provider.ClassServer},
		{500, Body{}, provider.ClassServer},
		{503, Body{}, provider.ClassServer},
		{529, Body{Type: "overloaded_error"}, provider.ClassServer},
		{0, Body{Type: "overloaded_error"}, provider.ClassServer},
		{0, Body{Type: "rate_limit_error"}, provider.ClassRateLimit},
		{0, Body{Type: "server_error"}, provider.ClassServer},
		{0, Body{Type: "authentication_error"}, provider.ClassAuth},
		{0, Body{Type: "invalid_request_error"}, provider.ClassInvalidRequest},
		{0, Body{}, provider.ClassServer},
	}
	for _, tt := range tests {
		if got := Classify(tt.status, tt.body); got != tt.want {
			t.Errorf("Classify(%d, %+v) = %s, want %s", tt.status, tt.body, got, tt.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
	}{
		{nil, 0},
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"20"}}, 20 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.h, now); got != tt.want {
			t.Errorf("RetryAfter(%v) = %s, want %s", tt.h, got, tt.want)
		}
	}
}

func TestHTTPError(t *testing.T) {
	e := HTTPError(401, nil, []byte(`{"error":{"message":"Incorrect API key provided: sk-abc***wxyz","code":"invalid_api_key"}}`))
	want := &provider.Error{Class: provider.ClassAuth, Status: 401}
	if diff := cmp.Diff(want, e, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Err" }, cmp.Ignore())); diff != "" {
		t.Errorf("HTTPError (-want +got):\n%s", diff)
	}
	if got := e.Err.Error(); got != "Unauthorized [invalid_api_key]" {
		t.Errorf("HTTPError cause = %q, want the status text without the server's message", got)
	}
	e = HTTPError(429, http.Header{"Retry-After": {"2"}}, []byte(`{"error":{"message":"slow down","type":"rate_limit_error"}}`))
	if e.Class != provider.ClassRateLimit || e.RetryAfter != 2*time.Second || e.Err.Error() != "slow down" {
		t.Errorf("HTTPError(429) = %+v", e)
	}
}

func TestTransportError(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		err  error
		want provider.Class
	}{
		{io.ErrUnexpectedEOF, provider.ClassNetwork},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), provider.ClassNetwork},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), provider.ClassNetwork},
		{errors.New("strange"), provider.ClassServer},
		{&provider.Error{Class: provider.ClassAuth}, provider.ClassAuth},
	}
	for _, tt := range tests {
		if got := TransportError(ctx, tt.err).Class; got != tt.want {
			t.Errorf("TransportError(%v) class = %s, want %s", tt.err, got, tt.want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if got := TransportError(cctx, io.ErrUnexpectedEOF).Class; got != provider.ClassCancelled {
		t.Errorf("TransportError after cancel = %s, want cancelled", got)
	}
}

func TestIsLoopback(t *testing.T) {
	tests := map[string]bool{
		"http://127.0.0.1:11434/v1":   true,
		"http://127.1.2.3/v1":         true,
		"http://localhost:1234/v1":    true,
		"http://LOCALHOST/v1":         true,
		"http://api.localhost/v1":     false,
		"http://[::1]:8080/v1":        true,
		"https://api.openai.com/v1":   false,
		"http://192.168.1.10:8000/v1": false,
		"http://localhost.evil.com/":  false,
		"http://127.0.0.1.nip.io/":    false,
		"localhost:11434":             false,
		"":                            false,
	}
	for in, want := range tests {
		if got := IsLoopback(in); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestExposed(t *testing.T) {
	cases := []struct {
		url            string
		pinned, custom bool // exposed with HTTPClient, with a caller's client
	}{
		{"http://127.0.0.1:8000/v1", false, false},
		{"http://127.255.0.9/v1", false, false},
		{"http://[::1]:8000/v1", false, false},
		{"http://[::ffff:127.0.0.1]:8000/v1", false, false},
		{"http://localhost:11434/v1", false, true},
		{"http://LocalHost/v1", false, true},
		{"https://192.0.2.2/v1", false, false},
		{"HTTPS://gpu-box.lan/v1", false, false},
		{"http://192.0.2.2:8000/v1", true, true},
		{"http://gpu-box.lan/v1", true, true},
		{"http://localhost./v1", true, true},
		{"http://a.localhost/v1", true, true},
		{"http://127.0.0.1.nip.io/v1", true, true},
		{"http://127.1/v1", true, true},
		{"http://0.0.0.0/v1", true, true},
		{"http://[fe80::1%25eth0]/v1", true, true},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := exposed(u, true); got != c.pinned {
			t.Errorf("exposed(%s, pinned) = %v, want %v", c.url, got, c.pinned)
		}
		if got := exposed(u, false); got != c.custom {
			t.Errorf("exposed(%s, caller's client) = %v, want %v", c.url, got, c.custom)
		}
	}
}

// TestHTTPClientPinsLocalhost: the providers' client dials the name
// localhost at the loopback addresses itself, and nothing else.
func TestHTTPClientPinsLocalhost(t *testing.T) {
	for addr, want := range map[string][]string{
		"localhost:8080":   {"127.0.0.1:8080", "[::1]:8080"},
		"LOCALHOST:1":      {"127.0.0.1:1", "[::1]:1"},
		"localhost.:8080":  nil,
		"127.0.0.1:8080":   nil,
		"gpu-box.lan:8000": nil,
	} {
		if got := localhostAddrs(addr); !cmp.Equal(got, want) {
			t.Errorf("localhostAddrs(%q) = %q, want %q", addr, got, want)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "here") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := HTTPClient()
	defer c.CloseIdleConnections()
	res, err := c.Get("http://localhost:" + port + "/")
	if err != nil {
		t.Fatalf("GET via localhost: %v", err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "here" {
		t.Errorf("GET via localhost = %q, want the loopback server's answer", body)
	}
}
