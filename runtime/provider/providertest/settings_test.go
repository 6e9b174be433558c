package providertest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/anthropic"
	"github.com/openprogram/openprogram/runtime/provider/openai"
	"github.com/openprogram/openprogram/runtime/provider/providertest"
	"github.com/openprogram/openprogram/runtime/secretenv"
)

func ptr[T any](v T) *T { return &v }

var hello = []provider.Message{{Role: provider.RoleUser, Content: "hi"}}

// body decodes the request body as a generic JSON object.
func body(t *testing.T, r providertest.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := r.JSON(&m); err != nil {
		t.Fatalf("request body: %v", err)
	}
	return m
}

func only(t *testing.T, srv *providertest.Server) providertest.Request {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// pick returns the members of m named in keys that are present.
func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

var settingKeys = []string{"temperature", "top_p", "max_tokens", "max_completion_tokens", "top_k"}

func full() provider.Settings {
	return provider.Settings{
		Temperature:     ptr(0.25),
		TopP:            ptr(0.9),
		MaxOutputTokens: 777,
		Timeout:         time.Minute,
		Headers:         map[string]string{"HTTP-Referer": "https://example.org/app", "X-Title": "OpenProgram test", "api-key": "azure-secret"},
		UserAgent:       provider.UserAgent("1.2.3"),
	}
}

func TestOpenAISettingsInRequest(t *testing.T) {
	cases := []struct {
		name     string
		settings provider.Settings
		want     map[string]any
		headers  map[string]string
	}{
		{"all set", full(), map[string]any{"temperature": 0.25, "top_p": 0.9, "max_tokens": 777.0},
			map[string]string{"HTTP-Referer": "https://example.org/app", "X-Title": "OpenProgram test", "Api-Key": "azure-secret", "User-Agent": "openprogram/1.2.3"}},
		{"none set", provider.Settings{}, map[string]any{},
			map[string]string{"HTTP-Referer": "", "X-Title": "", "User-Agent": "openprogram/dev"}},
		{"zero values are sent", provider.Settings{Temperature: ptr(0.0), TopP: ptr(0.0)}, map[string]any{"temperature": 0.0, "top_p": 0.0},
			map[string]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.New(t, providertest.Reply{Body: providertest.OpenAIText("m", "ok")})
			p, err := openai.New(openai.Options{Model: "m", BaseURL: srv.URL + "/v1", APIKey: "sk-x", HTTPClient: srv.Client(), Settings: tc.settings})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Stream(t.Context(), provider.Request{Messages: hello}, nil); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			r := only(t, srv)
			b := body(t, r)
			if diff := cmp.Diff(tc.want, pick(b, settingKeys...)); diff != "" {
				t.Errorf("settings in the body (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(map[string]any{"include_usage": true}, b["stream_options"]); diff != "" {
				t.Errorf("stream_options (-want +got):\n%s", diff)
			}
			for k, v := range tc.headers {
				if got := r.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestOpenAIHeaderReplacesAuthorization(t *testing.T) {
	srv := providertest.New(t, providertest.Reply{Body: providertest.OpenAIText("m", "ok")})
	// The routed test server speaks plain HTTP: the opt-in lets the header go.
	p, err := openai.New(openai.Options{Model: "m", BaseURL: "http://gateway.internal:9000/v1", Keyless: true, HTTPClient: srv.RoutedClient(),
		Settings: provider.Settings{Headers: map[string]string{"Authorization": "Token gw-123"}, AllowUnencryptedKey: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(t.Context(), provider.Request{Messages: hello}, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if got := only(t, srv).Header.Values("Authorization"); !cmp.Equal(got, []string{"Token gw-123"}) {
		t.Errorf("Authorization = %q, want the configured header alone", got)
	}
}

func TestAnthropicSettingsInRequest(t *testing.T) {
	cases := []struct {
		name     string
		settings provider.Settings
		want     map[string]any
		headers  map[string]string
	}{
		{"all set", provider.Settings{MaxOutputTokens: 777, Timeout: time.Minute, UserAgent: provider.UserAgent("1.2.3"),
			Headers: map[string]string{"anthropic-beta": "feature-x", "X-Title": "OpenProgram test"}},
			map[string]any{"max_tokens": 777.0},
			map[string]string{"Anthropic-Beta": "feature-x", "X-Title": "OpenProgram test", "User-Agent": "openprogram/1.2.3"}},
		// The API requires max_tokens: the provider's default is sent.
		{"none set", provider.Settings{}, map[string]any{"max_tokens": float64(anthropic.DefaultMaxTokens)},
			map[string]string{"X-Title": "", "User-Agent": "openprogram/dev"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := providertest.New(t, providertest.Reply{Body: providertest.AnthropicText("m", "ok")})
			p, err := anthropic.New(anthropic.Options{Model: "m", BaseURL: srv.URL, APIKey: "sk-ant-x", HTTPClient: srv.Client(), Settings: tc.settings})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Stream(t.Context(), provider.Request{Messages: hello}, nil); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			r := only(t, srv)
			if diff := cmp.Diff(tc.want, pick(body(t, r), settingKeys...)); diff != "" {
				t.Errorf("settings in the body (-want +got):\n%s", diff)
			}
			for k, v := range tc.headers {
				if got := r.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestAnthropicRefusesSampling(t *testing.T) {
	for _, s := range []provider.Settings{{Temperature: ptr(0.5)}, {TopP: ptr(0.5)}} {
		_, err := anthropic.New(anthropic.Options{Model: "m", APIKey: "k", Settings: s})
		if err == nil || !strings.Contains(err.Error(), "rejects") {
			t.Errorf("New(%+v) = %v, want a refusal saying why", s, err)
		}
	}
}

// A keyless server on a host that is not literally loopback works with
// Keyless (model.api_key_env none), and no key header is sent.
func TestKeylessNonLoopback(t *testing.T) {
	t.Run("openai", func(t *testing.T) {
		srv := providertest.New(t, providertest.Reply{Body: providertest.OpenAIText("m", "ok")})
		if _, err := openai.New(openai.Options{Model: "m", BaseURL: "http://gpu-box.lan:8000/v1"}); err == nil {
			t.Fatal("New without a key or Keyless accepted a non-loopback URL")
		}
		p, err := openai.New(openai.Options{Model: "m", BaseURL: "http://gpu-box.lan:8000/v1", Keyless: true, HTTPClient: srv.RoutedClient()})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.Stream(t.Context(), provider.Request{Messages: hello}, nil)
		if err != nil || resp.Text != "ok" {
			t.Fatalf("Stream = %+v, %v", resp, err)
		}
		r := only(t, srv)
		if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "" {
			t.Errorf("request %s with Authorization %q, want /v1/chat/completions without one", r.Path, r.Header.Get("Authorization"))
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		srv := providertest.New(t, providertest.Reply{Body: providertest.AnthropicText("m", "ok")})
		p, err := anthropic.New(anthropic.Options{Model: "m", BaseURL: "http://claude-proxy.docker:8080/", Keyless: true, HTTPClient: srv.RoutedClient()})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := p.Stream(t.Context(), provider.Request{Messages: hello}, nil)
		if err != nil || resp.Text != "ok" {
			t.Fatalf("Stream = %+v, %v", resp, err)
		}
		h := only(t, srv).Header
		if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" {
			t.Errorf("a keyless request sent a key header: %v", h)
		}
	})
}

func TestUsageReported(t *testing.T) {
	srv := providertest.New(t,
		providertest.Reply{Body: providertest.OpenAIUsage(providertest.OpenAIText("m", "ok"), 120, 7)},
		providertest.Reply{Body: providertest.OpenAIText("m", "ok")})
	p, err := openai.New(openai.Options{Model: "m", BaseURL: srv.URL + "/v1", APIKey: "k", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Stream(t.Context(), provider.Request{Messages: hello}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&provider.Usage{InputTokens: 120, OutputTokens: 7}, resp.Usage); diff != "" {
		t.Errorf("openai usage (-want +got):\n%s", diff)
	}
	// A server that ignores include_usage reports none.
	if resp, err = p.Stream(t.Context(), provider.Request{Messages: hello}, nil); err != nil || resp.Usage != nil {
		t.Errorf("usage without a usage chunk = %+v, %v; want nil", resp.Usage, err)
	}

	asrv := providertest.New(t, providertest.Reply{Body: providertest.AnthropicText("m", "ok")})
	ap, err := anthropic.New(anthropic.Options{Model: "m", BaseURL: asrv.URL, APIKey: "k", HTTPClient: asrv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = ap.Stream(t.Context(), provider.Request{Messages: hello}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&provider.Usage{InputTokens: 25, OutputTokens: 15}, resp.Usage); diff != "" {
		t.Errorf("anthropic usage (-want +got):\n%s", diff)
	}
}

// stallTimeout is model.timeout in the stall tests; margin is what the
// failure may take beyond it on a loaded machine (it tells a timeout from a
// hang, which the test's one-minute context would end). aliveTimeout is
// model.timeout where events keep arriving every aliveTimeout/4: four times
// the gap, so a busy scheduler does not turn "slow" into "stalled", while the
// whole stream (five gaps or more) outlasts it, so a timeout on the whole
// request rather than on the silence between events fails the test.
const (
	stallTimeout = 300 * time.Millisecond
	margin       = 20 * time.Second
	aliveTimeout = 2 * time.Second
)

// A server that stalls before the headers, or in the middle of the stream,
// fails the request with ClassTimeout within the timeout plus a margin,
// through the retry wrapper, which does not retry it.
func TestStallTimesOut(t *testing.T) {
	type backend struct {
		name string
		text func() string
		new  func(srv *providertest.Server) (provider.Provider, error)
	}
	settings := provider.Settings{Timeout: stallTimeout}
	backends := []backend{
		{"openai", func() string { return providertest.OpenAIText("m", "a", "b", "c") }, func(srv *providertest.Server) (provider.Provider, error) {
			return openai.New(openai.Options{Model: "m", BaseURL: srv.URL + "/v1", APIKey: "k", HTTPClient: srv.Client(), Settings: settings})
		}},
		{"anthropic", func() string { return providertest.AnthropicText("m", "a", "b", "c") }, func(srv *providertest.Server) (provider.Provider, error) {
			return anthropic.New(anthropic.Options{Model: "m", BaseURL: srv.URL, APIKey: "k", HTTPClient: srv.Client(), Settings: settings})
		}},
	}
	for _, b := range backends {
		for _, stall := range []struct {
			name  string
			reply providertest.Reply
		}{
			{"before headers", providertest.Reply{Stall: true}},
			{"mid-stream", providertest.Reply{Body: b.text(), HoldAfter: 3}},
			// Events keep arriving, each within the timeout: no timeout.
			{"slow but alive", providertest.Reply{Body: b.text(), EventDelay: aliveTimeout / 4}},
		} {
			t.Run(b.name+"/"+stall.name, func(t *testing.T) {
				srv := providertest.New(t, stall.reply, stall.reply, stall.reply, stall.reply)
				settings.Timeout = stallTimeout
				if stall.reply.EventDelay > 0 {
					settings.Timeout = aliveTimeout
				}
				inner, err := b.new(srv)
				if err != nil {
					t.Fatal(err)
				}
				p := provider.WithRetry(inner, provider.RetryPolicy{BaseDelay: time.Millisecond})
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				start := time.Now()
				resp, err := p.Stream(ctx, provider.Request{Messages: hello}, nil)
				elapsed := time.Since(start)
				if stall.reply.EventDelay > 0 {
					if err != nil || resp.Text != "abc" {
						t.Fatalf("Stream = %q, %v; want the whole slow reply", resp.Text, err)
					}
					return
				}
				if provider.ClassOf(err) != provider.ClassTimeout {
					t.Fatalf("Stream error = %v (class %q), want class timeout", err, provider.ClassOf(err))
				}
				if !strings.Contains(err.Error(), "model.timeout") {
					t.Errorf("error %q does not name model.timeout", err)
				}
				if elapsed > stallTimeout+margin {
					t.Errorf("the stall took %s to fail, want under %s", elapsed, stallTimeout+margin)
				}
				if n := len(srv.Requests()); n != 1 {
					t.Errorf("server saw %d requests, want 1 (a timeout is not retried)", n)
				}
				if !srv.WaitAborted(ctx) {
					t.Error("the stalled request was never hung up on")
				}
			})
		}
	}
}

// Retries stop at the caller's deadline (the turn timeout): a backoff that
// would outlast it is not waited.
func TestRetryRespectsDeadline(t *testing.T) {
	srv := providertest.New(t,
		providertest.Reply{Status: http.StatusServiceUnavailable, Body: `{"error":{"message":"busy","type":"server_error"}}`},
		providertest.Reply{Body: providertest.OpenAIText("m", "late")})
	inner, err := openai.New(openai.Options{Model: "m", BaseURL: srv.URL + "/v1", APIKey: "k", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	p := provider.WithRetry(inner, provider.RetryPolicy{BaseDelay: time.Hour, MaxDelay: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = p.Stream(ctx, provider.Request{Messages: hello}, nil)
	if provider.ClassOf(err) != provider.ClassServer {
		t.Fatalf("Stream error = %v, want the server error at once", err)
	}
	if elapsed := time.Since(start); elapsed > margin {
		t.Errorf("Stream took %s, want the error without waiting", elapsed)
	}
}

func TestExpandHeaders(t *testing.T) {
	env := map[string]string{"OR_KEY": "k-123", "EMPTY": "", secretenv.MCPToken: "mcp-token-value"}
	lookup := func(k string) string { return env[k] }
	got, err := provider.ExpandHeaders(map[string]string{"api-key": "${OR_KEY}", "X-Title": "cost $5 ${OR_KEY}!"}, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"api-key": "k-123", "X-Title": "cost $5 k-123!"}, got); diff != "" {
		t.Errorf("expanded (-want +got):\n%s", diff)
	}
	for _, bad := range []struct{ name, value, want string }{
		{"X-A", "${MISSING}", "MISSING is not set"},
		{"X-A", "${EMPTY}", "EMPTY is not set"},
		{"X-A", "${" + secretenv.MCPToken + "}", "MCP server token"},
		{"X-A", "${OR_KEY", "closing"},
		{"X-A", "${1X}", "does not name"},
		{"X-A", "a\r\nX-Injected: 1", "control character"},
		{"Bad Name", "v", "not an HTTP token"},
		{"content-length", "1", "set by the HTTP client"},
		{"Host", "evil", "set by the HTTP client"},
	} {
		_, err := provider.ExpandHeaders(map[string]string{bad.name: bad.value}, lookup)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ExpandHeaders(%q: %q) = %v, want an error containing %q", bad.name, bad.value, err, bad.want)
		}
		if err != nil && strings.Contains(err.Error(), "mcp-token-value") {
			t.Errorf("error leaks a variable's value: %v", err)
		}
	}
}

// Azure's deployment-style URL: the api-version query of the base URL goes
// with the request, and the key in an api-key header (model.headers) with
// api_key_env none.
func TestAzureDeploymentURL(t *testing.T) {
	srv := providertest.New(t, providertest.Reply{Body: providertest.OpenAIText("m", "ok")})
	// The routed test server speaks plain HTTP: the opt-in lets the key go.
	p, err := openai.New(openai.Options{Model: "gpt-4o", Keyless: true, HTTPClient: srv.RoutedClient(),
		BaseURL:  "http://myres.openai.azure.com/openai/deployments/my-gpt4o?api-version=2024-10-21",
		Settings: provider.Settings{Headers: map[string]string{"api-key": "az-key"}, AllowUnencryptedKey: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(t.Context(), provider.Request{Messages: hello}, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	r := only(t, srv)
	if r.Path != "/openai/deployments/my-gpt4o/chat/completions" || r.Query != "api-version=2024-10-21" {
		t.Errorf("request = %s?%s, want the deployment path with the api-version", r.Path, r.Query)
	}
	if r.Header.Get("Api-Key") != "az-key" || r.Header.Get("Authorization") != "" {
		t.Errorf("headers = %v, want api-key alone", r.Header)
	}
}
