package runtime_test

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/anthropic"
	"github.com/openprogram/openprogram/runtime/provider/openai"
	"github.com/openprogram/openprogram/runtime/provider/providertest"
)

// plainEnv holds the keys and the header variable the cases below read.
var plainEnv = map[string]string{"OPENAI_API_KEY": "sk-openai-secret", "ANTHROPIC_API_KEY": "sk-ant-secret", "AZURE_KEY": "az-secret"}

func plainGetenv(k string) string { return plainEnv[k] }

// withHeaders is cfg with model.headers set.
func withHeaders(cfg provider.Config, h map[string]string) provider.Config {
	cfg.Headers = h
	return cfg
}

// TestPlainHTTPRefused: a key, or model.headers, never goes over plain
// http:// to a host that is not literally this machine, unless
// model.allow_unencrypted_key says so; the error says why and how, and
// holds no secret.
func TestPlainHTTPRefused(t *testing.T) {
	oai := func(base string) provider.Config {
		return provider.Config{Provider: "openai", Model: "m", BaseURL: base}
	}
	ant := func(base string) provider.Config {
		return provider.Config{Provider: "anthropic", Model: "m", BaseURL: base}
	}
	refused := []struct {
		name string
		cfg  provider.Config
		host string // as the error shows it
	}{
		{"openai key, remote address", oai("http://192.0.2.2:8000/v1"), "192.0.2.2"},
		{"openai key, LAN name", oai("http://gpu-box.lan:11434/v1"), "gpu-box.lan"},
		{"openai key, upper-case scheme", oai("HTTP://192.0.2.2:8000/v1"), "192.0.2.2"},
		{"anthropic key", ant("http://192.0.2.2:8080"), "192.0.2.2"},
		{"keyless, header reads a variable", withHeaders(provider.Config{Provider: "openai", Model: "m", BaseURL: "http://azure.lan/openai/v1", APIKeyEnv: "none"},
			map[string]string{"api-key": "${AZURE_KEY}"}), "azure.lan"},
		{"keyless anthropic, literal credential header", withHeaders(provider.Config{Provider: "anthropic", Model: "m", BaseURL: "http://proxy:8080", APIKeyEnv: "none"},
			map[string]string{"Authorization": "Bearer literal-secret"}), "proxy"},
		// Only the literal loopback forms count: nothing a resolver answers.
		{"localhost with a trailing dot", oai("http://localhost.:11434/v1"), "localhost."},
		{"a name that resolves to loopback", oai("http://127.0.0.1.nip.io:11434/v1"), "127.0.0.1.nip.io"},
		{"a subdomain of localhost", oai("http://evil.localhost:11434/v1"), "evil.localhost"},
		{"short IPv4 form", oai("http://127.1:11434/v1"), "127.1"},
		{"the unspecified address", oai("http://0.0.0.0:11434/v1"), "0.0.0.0"},
		{"IPv6 link-local", oai("http://[fe80::1]:11434/v1"), "fe80::1"},
		{"credentials in the URL are not shown", oai("http://user:pw-secret@192.0.2.2:8000/v1"), "192.0.2.2"},
	}
	for _, tt := range refused {
		_, err := runtime.NewProvider(tt.cfg, plainGetenv)
		ce, ok := errors.AsType[*runtime.ConfigError](err)
		if !ok {
			t.Errorf("%s: NewProvider = %v, want *ConfigError", tt.name, err)
			continue
		}
		if diff := cmp.Diff([]string{"model.base_url", "model.allow_unencrypted_key"}, ce.Keys); diff != "" {
			t.Errorf("%s: keys (-want +got):\n%s", tt.name, diff)
		}
		if !errors.Is(err, provider.ErrUnencryptedKey) {
			t.Errorf("%s: error %v does not wrap provider.ErrUnencryptedKey", tt.name, err)
		}
		for _, s := range []string{"unencrypted", tt.host, "https://", "openprogram config set model.allow_unencrypted_key true"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %q", tt.name, err, s)
			}
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error %q leaks a secret", tt.name, err)
		}
	}

	allowed := []struct {
		name string
		cfg  provider.Config
	}{
		{"127.0.0.1", oai("http://127.0.0.1:11434/v1")},
		{"elsewhere in 127.0.0.0/8", oai("http://127.8.9.10:11434/v1")},
		{"::1", oai("http://[::1]:11434/v1")},
		{"localhost", oai("http://localhost:11434/v1")},
		{"LOCALHOST", ant("http://LOCALHOST:8080")},
		{"https", oai("https://192.0.2.2:8000/v1")},
		{"https anthropic with a header", withHeaders(ant("https://proxy.example"), map[string]string{"X-Key": "${AZURE_KEY}"})},
		{"keyless, no headers", provider.Config{Provider: "openai", Model: "m", BaseURL: "http://gpu-box.lan:8000/v1", APIKeyEnv: "none"}},
		{"the owner's opt-in", provider.Config{Provider: "openai", Model: "m", BaseURL: "http://192.0.2.2:8000/v1",
			Settings: provider.Settings{AllowUnencryptedKey: true}}},
	}
	for _, tt := range allowed {
		if _, err := runtime.NewProvider(tt.cfg, plainGetenv); err != nil {
			t.Errorf("%s: NewProvider = %v, want a provider", tt.name, err)
		}
	}
}

// TestPlainHTTPRefusedByTheProviders: openai.New and anthropic.New apply
// the same rule to whoever calls them directly; a client of one's own
// makes the name localhost untrusted (its dialer may resolve it).
func TestPlainHTTPRefusedByTheProviders(t *testing.T) {
	remote := provider.Endpoint{Model: "m", BaseURL: "http://192.0.2.2:8000/v1", APIKey: "k"}
	if _, err := openai.New(remote); !errors.Is(err, provider.ErrUnencryptedKey) {
		t.Errorf("openai.New(remote plain http) = %v, want ErrUnencryptedKey", err)
	}
	if _, err := anthropic.New(remote); !errors.Is(err, provider.ErrUnencryptedKey) {
		t.Errorf("anthropic.New(remote plain http) = %v, want ErrUnencryptedKey", err)
	}
	local := provider.Endpoint{Model: "m", BaseURL: "http://localhost:11434/v1", APIKey: "k"}
	if _, err := openai.New(local); err != nil {
		t.Errorf("openai.New(localhost, own client) = %v, want a provider", err)
	}
	local.HTTPClient = &http.Client{}
	if _, err := openai.New(local); !errors.Is(err, provider.ErrUnencryptedKey) {
		t.Errorf("openai.New(localhost, caller's client) = %v, want ErrUnencryptedKey", err)
	}
	local.BaseURL = "http://127.0.0.1:11434/v1"
	if _, err := openai.New(local); err != nil {
		t.Errorf("openai.New(127.0.0.1, caller's client) = %v, want a provider", err)
	}
}

// TestPlainHTTPRealServers: against real servers, one on loopback and one
// on a non-loopback address of this machine, the key reaches the first and
// never the second (no connection is even made) until the owner opts in.
func TestPlainHTTPRealServers(t *testing.T) {
	answer := providertest.Reply{Body: providertest.OpenAIText("m", "ok")}
	local := providertest.New(t, answer)
	remote := providertest.NewAt(t, net.JoinHostPort(providertest.NonLoopbackIP(t), "0"), answer)
	hello := provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}}
	cfg := func(srv *providertest.Server, allow bool) provider.Config {
		return provider.Config{Provider: "openai", Model: "m", BaseURL: srv.URL + "/v1", Settings: provider.Settings{AllowUnencryptedKey: allow}}
	}
	keyOf := func(srv *providertest.Server) []string {
		var keys []string
		for _, r := range srv.Requests() {
			keys = append(keys, r.Header.Get("Authorization"))
		}
		return keys
	}

	p, err := runtime.NewProvider(cfg(local, false), plainGetenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(t.Context(), hello, nil); err != nil {
		t.Fatalf("loopback Stream: %v", err)
	}
	if got := keyOf(local); !cmp.Equal(got, []string{"Bearer sk-openai-secret"}) {
		t.Errorf("loopback server got keys %q, want one request with the key", got)
	}

	if _, err := runtime.NewProvider(cfg(remote, false), plainGetenv); !errors.Is(err, provider.ErrUnencryptedKey) {
		t.Fatalf("NewProvider(%s) = %v, want ErrUnencryptedKey", remote.URL, err)
	}
	if n := remote.Connections(); n != 0 {
		t.Errorf("the refused provider opened %d connections to %s", n, remote.URL)
	}

	// The server was reachable all along: with the opt-in the key goes.
	p, err = runtime.NewProvider(cfg(remote, true), plainGetenv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stream(t.Context(), hello, nil); err != nil {
		t.Fatalf("opted-in Stream: %v", err)
	}
	if got := keyOf(remote); !cmp.Equal(got, []string{"Bearer sk-openai-secret"}) {
		t.Errorf("opted-in remote server got keys %q, want one request with the key", got)
	}
}

// TestPlainHTTPRedirectRefused: a trusted endpoint that redirects to plain
// HTTP elsewhere is not followed (Go's client drops Authorization on the
// way to another host, but carries model.headers along), and the failure
// is not retried.
func TestPlainHTTPRedirectRefused(t *testing.T) {
	remote := providertest.NewAt(t, net.JoinHostPort(providertest.NonLoopbackIP(t), "0"), providertest.Reply{Body: providertest.AnthropicText("m", "ok")})
	local := providertest.New(t, providertest.Reply{Status: http.StatusTemporaryRedirect,
		Header: http.Header{"Location": {remote.URL + "/v1/messages"}}})
	cfg := withHeaders(provider.Config{Provider: "anthropic", Model: "m", BaseURL: local.URL}, map[string]string{"X-Gateway-Key": "${AZURE_KEY}"})
	p, err := runtime.NewProvider(cfg, plainGetenv)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Stream(t.Context(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}}, nil)
	if !errors.Is(err, provider.ErrUnencryptedKey) || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("Stream through a redirect to %s = %v, want a refusal naming the redirect", remote.URL, err)
	}
	if n := remote.Connections(); n != 0 {
		t.Errorf("the redirect was followed: %d connections to %s, requests %+v", n, remote.URL, remote.Requests())
	}
	if got := len(local.Requests()); got != 1 {
		t.Errorf("the loopback server got %d requests, want 1 (a refusal is not retried)", got)
	}
}
