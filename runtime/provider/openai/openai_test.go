package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/openai"
	"github.com/openprogram/openprogram/runtime/provider/providertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fixture(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func newProvider(t *testing.T, srv *providertest.Server, key string) *openai.Provider {
	t.Helper()
	p, err := openai.New(openai.Options{Model: "gpt-test", BaseURL: srv.URL + "/v1", APIKey: key, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

type wireRequest struct {
	Model    string           `json:"model"`
	Stream   bool             `json:"stream"`
	Messages []map[string]any `json:"messages"`
	Tools    []map[string]any `json:"tools"`
	MaxTok   *int             `json:"max_tokens"`
	MaxComp  *int             `json:"max_completion_tokens"`
}

func TestStreamText(t *testing.T) {
	srv := providertest.New(t, providertest.Reply{Body: fixture(t, "text.sse")})
	p := newProvider(t, srv, "sk-test-123")
	var deltas []string
	resp, err := p.Stream(t.Context(), provider.Request{
		System:    "be brief",
		Messages:  []provider.Message{{Role: provider.RoleUser, Content: "hi"}},
		MaxTokens: 50,
	}, func(d provider.Delta) { deltas = append(deltas, d.Text) })
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := provider.Response{Text: "Hello there! ✓", StopReason: provider.StopEnd}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("Stream response (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Hello", " there", "! ✓"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}

	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-test-123" {
		t.Errorf("Authorization = %q, want the bearer key", got)
	}
	var body wireRequest
	if err := r.JSON(&body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "gpt-test" || !body.Stream {
		t.Errorf("model, stream = %q, %v; want gpt-test, true", body.Model, body.Stream)
	}
	wantMsgs := []map[string]any{{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}}
	if diff := cmp.Diff(wantMsgs, body.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if body.MaxTok == nil || *body.MaxTok != 50 || body.MaxComp != nil {
		t.Errorf("max_tokens = %v, max_completion_tokens = %v; want 50 and absent for a compatible server", body.MaxTok, body.MaxComp)
	}
}

func TestStreamToolCalls(t *testing.T) {
	srv := providertest.New(t, providertest.Reply{Body: fixture(t, "tool_calls.sse")})
	p := newProvider(t, srv, "sk-test")
	req := provider.Request{
		Messages: []provider.Message{
			{Role: provider.RoleUser, Content: "what is in the readme?"},
			{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "call_0", Name: "glob", Arguments: json.RawMessage(`{"pattern":"*.md"}`)}}},
			{Role: provider.RoleTool, ToolCallID: "call_0", ToolName: "glob", Content: "README.md", IsError: false},
			{Role: provider.RoleAssistant, Content: "Found it."},
			{Role: provider.RoleUser, Content: "read it"},
		},
		Tools: []provider.ToolSpec{{Name: "read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}},
	}
	resp, err := p.Stream(t.Context(), req, nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := provider.Response{StopReason: provider.StopToolUse, ToolCalls: []provider.ToolCall{
		{ID: "call_Jx8dK2mN", Name: "read", Arguments: json.RawMessage(`{"path": "README.md"}`)},
		{ID: "call_Qw3eR4tY", Name: "list", Arguments: json.RawMessage(`{"path": "."}`)},
	}}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("Stream response (-want +got):\n%s", diff)
	}

	var body wireRequest
	if err := srv.Requests()[0].JSON(&body); err != nil {
		t.Fatal(err)
	}
	wantMsgs := []map[string]any{
		{"role": "user", "content": "what is in the readme?"},
		{"role": "assistant", "tool_calls": []any{map[string]any{"id": "call_0", "type": "function", "function": map[string]any{"name": "glob", "arguments": `{"pattern":"*.md"}`}}}},
		{"role": "tool", "tool_call_id": "call_0", "content": "README.md"},
		{"role": "assistant", "content": "Found it."},
		{"role": "user", "content": "read it"},
	}
	if diff := cmp.Diff(wantMsgs, body.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	wantTools := []map[string]any{{"type": "function", "function": map[string]any{
		"name": "read", "description": "Read a file.",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}, "additionalProperties": false},
	}}}
	if diff := cmp.Diff(wantTools, body.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestStreamCompatibleServers(t *testing.T) {
	tests := []struct {
		fixture string
		want    provider.Response
	}{
		{"ollama_tool_calls.sse", provider.Response{StopReason: provider.StopToolUse, ToolCalls: []provider.ToolCall{
			{ID: "call_8a1b2c3d", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
			{ID: "call_9e8f7a6b", Name: "glob", Arguments: json.RawMessage(`{"pattern":"*.go"}`)},
		}}},
		{"llamacpp_text.sse", provider.Response{Text: "Local reply.", StopReason: provider.StopMaxTokens, Usage: &provider.Usage{InputTokens: 10, OutputTokens: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			srv := providertest.New(t, providertest.Reply{Body: fixture(t, tt.fixture)})
			p := newProvider(t, srv, "")
			resp, err := p.Stream(t.Context(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}}, nil)
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if diff := cmp.Diff(tt.want, resp); diff != "" {
				t.Errorf("Stream response (-want +got):\n%s", diff)
			}
			if got := srv.Requests()[0].Header.Get("Authorization"); got != "" {
				t.Errorf("Authorization = %q, want none without a key", got)
			}
		})
	}
}

func TestStreamErrors(t *testing.T) {
	tests := []struct {
		name       string
		reply      providertest.Reply
		class      provider.Class
		status     int
		retryAfter time.Duration
		notInMsg   string
	}{
		{"401", providertest.Reply{Status: 401, Body: fixture(t, "err_401.json")}, provider.ClassAuth, 401, 0, "sk-proj"},
		{"429 retry-after-ms", providertest.Reply{Status: 429, Body: fixture(t, "err_429.json"), Header: http.Header{"Retry-After-Ms": {"1500"}}}, provider.ClassRateLimit, 429, 1500 * time.Millisecond, ""},
		{"429 retry-after", providertest.Reply{Status: 429, Body: fixture(t, "err_429.json"), Header: http.Header{"Retry-After": {"20"}}}, provider.ClassRateLimit, 429, 20 * time.Second, ""},
		{"429 quota", providertest.Reply{Status: 429, Body: fixture(t, "err_429_quota.json")}, provider.ClassAuth, 429, 0, ""},
		{"400 context", providertest.Reply{Status: 400, Body: fixture(t, "err_400_context.json")}, provider.ClassContextLength, 400, 0, ""},
		{"400 vllm context", providertest.Reply{Status: 400, Body: fixture(t, "err_400_vllm.json")}, provider.ClassContextLength, 400, 0, ""},
		{"404 model", providertest.Reply{Status: 404, Body: fixture(t, "err_404_model.json")}, provider.ClassInvalidRequest, 404, 0, ""},
		{"404 ollama", providertest.Reply{Status: 404, Body: fixture(t, "err_404_ollama.json")}, provider.ClassInvalidRequest, 404, 0, ""},
		{"503 text", providertest.Reply{Status: 503, Body: fixture(t, "err_503.txt"), Header: http.Header{"Content-Type": {"text/plain"}}}, provider.ClassServer, 503, 0, ""},
		{"error event", providertest.Reply{Body: fixture(t, "error_midstream.sse")}, provider.ClassServer, 0, 0, ""},
		{"truncated", providertest.Reply{Body: fixture(t, "truncated.sse")}, provider.ClassNetwork, 0, 0, ""},
		{"dropped", providertest.Reply{Body: fixture(t, "text.sse"), DropAfter: 2}, provider.ClassNetwork, 0, 0, ""},
		{"not streamed", providertest.Reply{Body: `{"id":"x","object":"chat.completion","choices":[]}`, Header: http.Header{"Content-Type": {"application/json"}}}, provider.ClassNetwork, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.New(t, tt.reply)
			p := newProvider(t, srv, "sk-proj-secretsecret")
			_, err := p.Stream(t.Context(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}}, nil)
			pe, ok := errors.AsType[*provider.Error](err)
			if !ok {
				t.Fatalf("Stream error = %v (%T), want *provider.Error", err, err)
			}
			t.Logf("error: %v", err)
			if pe.Class != tt.class || pe.Status != tt.status || pe.RetryAfter != tt.retryAfter {
				t.Errorf("error class, status, retry after = %s, %d, %s; want %s, %d, %s (%v)", pe.Class, pe.Status, pe.RetryAfter, tt.class, tt.status, tt.retryAfter, err)
			}
			if msg := err.Error(); strings.Contains(msg, "secretsecret") || (tt.notInMsg != "" && strings.Contains(msg, tt.notInMsg)) {
				t.Errorf("error %q leaks key material", msg)
			}
			// The SDK's own retries are off: one request per call.
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("server saw %d requests, want exactly 1 (no SDK retries)", n)
			}
		})
	}
}

func TestStreamCancelAbortsRequest(t *testing.T) {
	srv := providertest.New(t, providertest.Reply{Body: fixture(t, "text.sse"), HoldAfter: 2})
	p := newProvider(t, srv, "sk-test")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var deltas []string
	gotDelta := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := p.Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}}, func(d provider.Delta) {
			deltas = append(deltas, d.Text)
			gotDelta <- struct{}{}
		})
		errc <- err
	}()
	<-srv.Held()
	<-gotDelta
	start := time.Now()
	cancel()
	err := <-errc
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("Stream returned %s after cancel, want at once", elapsed)
	}
	if provider.ClassOf(err) != provider.ClassCancelled || !errors.Is(err, context.Canceled) {
		t.Errorf("Stream error = %v, want a cancelled error matching context.Canceled", err)
	}
	if diff := cmp.Diff([]string{"Hello"}, deltas); diff != "" {
		t.Errorf("deltas before cancel (-want +got):\n%s", diff)
	}
	wctx, wcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer wcancel()
	if !srv.WaitAborted(wctx) {
		t.Error("server never saw the request aborted")
	}
}

func TestRetryAfterRateLimit(t *testing.T) {
	srv := providertest.New(t,
		providertest.Reply{Status: 429, Body: fixture(t, "err_429.json"), Header: http.Header{"Retry-After-Ms": {"10"}}},
		providertest.Reply{Status: 503, Body: fixture(t, "err_503.txt")},
		providertest.Reply{Body: fixture(t, "text.sse")},
	)
	p := provider.WithRetry(newProvider(t, srv, "sk-test"), provider.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond})
	resp, err := p.Stream(t.Context(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}}, nil)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp.Text != "Hello there! ✓" {
		t.Errorf("text = %q", resp.Text)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
}

func TestRetryNotAfterDelta(t *testing.T) {
	srv := providertest.New(t,
		providertest.Reply{Body: fixture(t, "text.sse"), DropAfter: 2},
		providertest.Reply{Body: fixture(t, "text.sse")},
	)
	p := provider.WithRetry(newProvider(t, srv, "sk-test"), provider.RetryPolicy{BaseDelay: time.Millisecond})
	var deltas []string
	_, err := p.Stream(t.Context(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}}, func(d provider.Delta) {
		deltas = append(deltas, d.Text)
	})
	if provider.ClassOf(err) != provider.ClassNetwork {
		t.Fatalf("Stream error = %v, want a network error", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1: text was already delivered", n)
	}
	if diff := cmp.Diff([]string{"Hello"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		opts    openai.Options
		wantErr string
	}{
		{"no model", openai.Options{APIKey: "k"}, "model name is empty"},
		{"no key remote", openai.Options{Model: "m", BaseURL: "https://openrouter.ai/api/v1"}, "no API key"},
		{"no key default", openai.Options{Model: "m"}, "no API key"},
		{"bad url", openai.Options{Model: "m", BaseURL: "localhost:11434", APIKey: "k"}, "not an http(s) URL"},
		{"loopback without key", openai.Options{Model: "m", BaseURL: "http://127.0.0.1:11434/v1"}, ""},
		{"localhost without key", openai.Options{Model: "m", BaseURL: "http://localhost:1234/v1"}, ""},
		{"ipv6 loopback without key", openai.Options{Model: "m", BaseURL: "http://[::1]:8080/v1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openai.New(tt.opts)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("New(%+v) = %v, want nil", tt.opts, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New(%+v) = %v, want error containing %q", tt.opts, err, tt.wantErr)
			}
		})
	}
}

func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	srv := providertest.New(t, providertest.Reply{Body: fixture(t, "text.sse")})
	p := newProvider(t, srv, "")
	if _, err := p.Stream(t.Context(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}}, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "" || h.Get("OpenAI-Organization") != "" {
		t.Errorf("request carried environment credentials: Authorization=%q OpenAI-Organization=%q", h.Get("Authorization"), h.Get("OpenAI-Organization"))
	}
}
