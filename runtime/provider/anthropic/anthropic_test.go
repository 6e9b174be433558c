package anthropic_test

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
	"github.com/openprogram/openprogram/runtime/provider/anthropic"
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

func newProvider(t *testing.T, srv *providertest.Server) *anthropic.Provider {
	t.Helper()
	p, err := anthropic.New(anthropic.Options{Model: "claude-test", BaseURL: srv.URL, APIKey: "sk-ant-secretsecret", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

type wireRequest struct {
	Model     string           `json:"model"`
	MaxTokens int              `json:"max_tokens"`
	Stream    bool             `json:"stream"`
	System    []map[string]any `json:"system"`
	Messages  []map[string]any `json:"messages"`
	Tools     []map[string]any `json:"tools"`
}

func TestStreamText(t *testing.T) {
	srv := providertest.New(t, providertest.Reply{Body: fixture(t, "text.sse")})
	p := newProvider(t, srv)
	var deltas []string
	resp, err := p.Stream(t.Context(), provider.Request{
		System:   "be brief",
		Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}},
	}, func(d provider.Delta) { deltas = append(deltas, d.Text) })
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := provider.Response{Text: "Hello there! ✓", StopReason: provider.StopEnd, Usage: &provider.Usage{InputTokens: 25, OutputTokens: 15}}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("Stream response (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Hello", " there", "! ✓"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	r := srv.Requests()[0]
	if r.Method != http.MethodPost || r.Path != "/v1/messages" {
		t.Errorf("request = %s %s, want POST /v1/messages", r.Method, r.Path)
	}
	if r.Header.Get("Anthropic-Version") == "" {
		t.Error("request has no anthropic-version header")
	}
	if !strings.Contains(r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"), "sk-ant-secretsecret") {
		t.Error("request does not carry the key")
	}
	var body wireRequest
	if err := r.JSON(&body); err != nil {
		t.Fatal(err)
	}
	if body.Model != "claude-test" || !body.Stream || body.MaxTokens != anthropic.DefaultMaxTokens {
		t.Errorf("model, stream, max_tokens = %q, %v, %d", body.Model, body.Stream, body.MaxTokens)
	}
	if diff := cmp.Diff([]map[string]any{{"type": "text", "text": "be brief"}}, body.System); diff != "" {
		t.Errorf("system (-want +got):\n%s", diff)
	}
}

func TestStreamToolUse(t *testing.T) {
	srv := providertest.New(t, providertest.Reply{Body: fixture(t, "tool_use.sse")})
	p := newProvider(t, srv)
	req := provider.Request{
		MaxTokens: 100,
		Messages: []provider.Message{
			{Role: provider.RoleUser, Content: "what is here?"},
			{Role: provider.RoleAssistant, Content: "Looking.", ToolCalls: []provider.ToolCall{
				{ID: "toolu_a", Name: "glob", Arguments: json.RawMessage(`{"pattern":"*.md"}`)},
				{ID: "toolu_b", Name: "bash", Arguments: json.RawMessage(`{"command":"ls"}`)},
			}},
			{Role: provider.RoleTool, ToolCallID: "toolu_a", ToolName: "glob", Content: "README.md"},
			{Role: provider.RoleTool, ToolCallID: "toolu_b", ToolName: "bash", Content: "[denied] hard constraint", IsError: true},
			{Role: provider.RoleAssistant, Content: "There is a README."},
			{Role: provider.RoleUser, Content: "first"},
			{Role: provider.RoleUser, Content: "read it"},
		},
		Tools: []provider.ToolSpec{{Name: "read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)}},
	}
	var deltas []string
	resp, err := p.Stream(t.Context(), req, func(d provider.Delta) { deltas = append(deltas, d.Text) })
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	want := provider.Response{Text: "Let me read it.", StopReason: provider.StopToolUse, Usage: &provider.Usage{InputTokens: 472, OutputTokens: 89}, ToolCalls: []provider.ToolCall{
		{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "read", Arguments: json.RawMessage(`{"path": "README.md"}`)},
		{ID: "toolu_01AbCdEfGhIjKlMnOpQrStUv", Name: "todo_list", Arguments: json.RawMessage(`{}`)},
	}}
	if diff := cmp.Diff(want, resp); diff != "" {
		t.Errorf("Stream response (-want +got):\n%s", diff)
	}

	var body wireRequest
	if err := srv.Requests()[0].JSON(&body); err != nil {
		t.Fatal(err)
	}
	wantMsgs := []map[string]any{
		{"role": "user", "content": []any{map[string]any{"type": "text", "text": "what is here?"}}},
		{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "Looking."},
			map[string]any{"type": "tool_use", "id": "toolu_a", "name": "glob", "input": map[string]any{"pattern": "*.md"}},
			map[string]any{"type": "tool_use", "id": "toolu_b", "name": "bash", "input": map[string]any{"command": "ls"}},
		}},
		{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_a", "content": []any{map[string]any{"type": "text", "text": "README.md"}}},
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true, "content": []any{map[string]any{"type": "text", "text": "[denied] hard constraint"}}},
		}},
		{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "There is a README."}}},
		{"role": "user", "content": []any{map[string]any{"type": "text", "text": "first"}, map[string]any{"type": "text", "text": "read it"}}},
	}
	if diff := cmp.Diff(wantMsgs, body.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	wantTools := []map[string]any{{
		"name": "read", "description": "Read a file.",
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []any{"path"}, "additionalProperties": false},
	}}
	if diff := cmp.Diff(wantTools, body.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if body.MaxTokens != 100 {
		t.Errorf("max_tokens = %d, want 100", body.MaxTokens)
	}
}

func TestStreamErrors(t *testing.T) {
	tests := []struct {
		name       string
		reply      providertest.Reply
		class      provider.Class
		status     int
		retryAfter time.Duration
	}{
		{"401", providertest.Reply{Status: 401, Body: fixture(t, "err_401.json")}, provider.ClassAuth, 401, 0},
		{"429", providertest.Reply{Status: 429, Body: fixture(t, "err_429.json"), Header: http.Header{"Retry-After": {"7"}}}, provider.ClassRateLimit, 429, 7 * time.Second},
		{"529", providertest.Reply{Status: 529, Body: fixture(t, "err_529.json")}, provider.ClassServer, 529, 0},
		{"400 context", providertest.Reply{Status: 400, Body: fixture(t, "err_400_context.json")}, provider.ClassContextLength, 400, 0},
		{"413", providertest.Reply{Status: 413, Body: fixture(t, "err_413.json")}, provider.ClassContextLength, 413, 0},
		{"404", providertest.Reply{Status: 404, Body: fixture(t, "err_404.json")}, provider.ClassInvalidRequest, 404, 0},
		{"error event", providertest.Reply{Body: fixture(t, "error_midstream.sse")}, provider.ClassServer, 0, 0},
		{"truncated", providertest.Reply{Body: fixture(t, "truncated.sse")}, provider.ClassNetwork, 0, 0},
		{"dropped", providertest.Reply{Body: fixture(t, "text.sse"), DropAfter: 3}, provider.ClassNetwork, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := providertest.New(t, tt.reply)
			p := newProvider(t, srv)
			_, err := p.Stream(t.Context(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}}, nil)
			pe, ok := errors.AsType[*provider.Error](err)
			if !ok {
				t.Fatalf("Stream error = %v (%T), want *provider.Error", err, err)
			}
			if pe.Class != tt.class || pe.Status != tt.status || pe.RetryAfter != tt.retryAfter {
				t.Errorf("error class, status, retry after = %s, %d, %s; want %s, %d, %s (%v)", pe.Class, pe.Status, pe.RetryAfter, tt.class, tt.status, tt.retryAfter, err)
			}
			if strings.Contains(err.Error(), "secretsecret") {
				t.Errorf("error %q leaks the key", err)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("server saw %d requests, want exactly 1 (no SDK retries)", n)
			}
		})
	}
}

func TestStreamCancelAbortsRequest(t *testing.T) {
	srv := providertest.New(t, providertest.Reply{Body: fixture(t, "text.sse"), HoldAfter: 4})
	p := newProvider(t, srv)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	gotDelta := make(chan struct{}, 1)
	errc := make(chan error, 1)
	go func() {
		_, err := p.Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}}, func(provider.Delta) {
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
	wctx, wcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer wcancel()
	if !srv.WaitAborted(wctx) {
		t.Error("server never saw the request aborted")
	}
}

func TestRetryOverloaded(t *testing.T) {
	srv := providertest.New(t,
		providertest.Reply{Status: 529, Body: fixture(t, "err_529.json")},
		providertest.Reply{Body: fixture(t, "error_midstream.sse")},
		providertest.Reply{Body: fixture(t, "text.sse")},
	)
	p := provider.WithRetry(newProvider(t, srv), provider.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond})
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

func TestNew(t *testing.T) {
	for _, tt := range []struct {
		opts    anthropic.Options
		wantErr string
	}{
		{anthropic.Options{APIKey: "k"}, "model name is empty"},
		{anthropic.Options{Model: "m"}, "no API key"},
		{anthropic.Options{Model: "m", APIKey: "k", BaseURL: "api.anthropic.com"}, "not an http(s) URL"},
	} {
		_, err := anthropic.New(tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("New(%+v) = %v, want error containing %q", tt.opts, err, tt.wantErr)
		}
	}
}

func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")
	srv := providertest.New(t, providertest.Reply{Body: fixture(t, "text.sse")})
	p := newProvider(t, srv)
	if _, err := p.Stream(t.Context(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "x"}}}, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	h := srv.Requests()[0].Header
	if strings.Contains(h.Get("Authorization")+h.Get("X-Api-Key"), "from-env") || h.Get("X-Leak") != "" {
		t.Errorf("request carried environment settings: %v", h)
	}
}
