package settings

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
)

// setText sets key k from its command-line text v, as `config set` does.
func setText(c *Config, k, v string) error {
	key, ok := LookupKey(k)
	if !ok {
		return fmt.Errorf("unknown key %s", k)
	}
	val, err := key.parseValue(v)
	if err != nil {
		return err
	}
	return c.set(k, val)
}

func configOf(t *testing.T, kv map[string]string) *Config {
	t.Helper()
	c := newConfig()
	for k, v := range kv {
		if err := setText(c, k, v); err != nil {
			t.Fatalf("set %s %s: %v", k, v, err)
		}
	}
	return c
}

func TestModelKeysValidated(t *testing.T) {
	good := map[string][]string{
		"model.temperature":       {"0", "0.7", "2", "null"},
		"model.top_p":             {"0.1", "1"},
		"model.max_output_tokens": {"1", "4096"},
		"model.timeout":           {"90s", "5m"},
		"model.turn_timeout":      {"30m"},
		"model.headers":           {`{}`, `{"HTTP-Referer":"https://example.org","X-Title":"OpenProgram","api-key":"${AZURE_OPENAI_KEY}"}`},
		"model.context_tokens":    {"8000"},
		"model.api_key_env":       {"none", "OPENROUTER_API_KEY"},
		"agent.max_steps":         {"1", "50"},
	}
	for k, vs := range good {
		for _, v := range vs {
			c := newConfig()
			if err := setText(c, k, v); err != nil {
				t.Errorf("set %s %s: %v", k, v, err)
			}
		}
	}
	bad := map[string][]string{
		"model.temperature":       {"-0.1", "2.5", `"hot"`},
		"model.top_p":             {"0", "1.5"},
		"model.max_output_tokens": {"0", "1.5", `"many"`},
		"model.timeout":           {"0s", "-1s", "forever", "90", "48h"},
		"model.turn_timeout":      {"0s"},
		"model.headers":           {`"X-Title: a"`, `{"X-Title":1}`, `{"Bad Name":"v"}`, `{"Host":"evil"}`, `{"X-A":"${OPENPROGRAM_MCP_TOKEN}"}`, `{"X-A":"${OPEN"}`},
		"model.context_tokens":    {"100", "-5"},
		"model.api_key_env":       {"OPENPROGRAM_MCP_TOKEN", "sk-abc-123"},
		"agent.max_steps":         {"0", "1001", "2.5"},
	}
	for k, vs := range bad {
		for _, v := range vs {
			c := newConfig()
			if err := setText(c, k, v); err == nil {
				t.Errorf("set %s %s accepted", k, v)
			}
		}
	}
}

func TestAnthropicRefusesSamplingAtConfigTime(t *testing.T) {
	if err := configOf(t, map[string]string{"model.provider": "anthropic", "model.temperature": "0.5"}).checkModel(); err == nil ||
		!strings.Contains(err.Error(), "rejects temperature") {
		t.Errorf("anthropic + temperature = %v, want a refusal with the reason", err)
	}
	if err := configOf(t, map[string]string{"model.provider": "openai", "model.temperature": "0.5", "model.top_p": "0.9"}).checkModel(); err != nil {
		t.Errorf("openai + temperature + top_p = %v", err)
	}
}

// wireRequest is what a fake OpenAI-compatible server records.
type wireRequest struct {
	header http.Header
	body   map[string]any
}

// Every model setting in config.json reaches the request the provider that
// `mcp serve` builds sends, and the runtime options take the rest.
func TestModelProviderFromConfig(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []wireRequest
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		seen = append(seen, wireRequest{r.Header.Clone(), body})
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
	}))
	defer srv.Close()

	cfg := configOf(t, map[string]string{
		"model.provider": "openai", "model.name": "m", "model.base_url": srv.URL + "/v1", "model.api_key_env": "none",
		"model.temperature": "0.3", "model.top_p": "0.8", "model.max_output_tokens": "512", "model.timeout": "45s",
		"model.headers":        `{"X-Title":"OpenProgram","api-key":"${AZ_KEY}"}`,
		"model.context_tokens": "16000", "model.turn_timeout": "10m", "agent.max_steps": "7",
	})
	p, err := cfg.Provider("v1.2.3", Env{"AZ_KEY=az-secret"}.Get)
	if err != nil {
		t.Fatalf("Provider: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := p.Stream(ctx, provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}}, nil); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(seen) != 1 {
		t.Fatalf("server saw %d requests", len(seen))
	}
	got := seen[0]
	for k, want := range map[string]any{"temperature": 0.3, "top_p": 0.8, "max_tokens": 512.0} {
		if got.body[k] != want {
			t.Errorf("body %s = %v, want %v", k, got.body[k], want)
		}
	}
	for k, want := range map[string]string{"X-Title": "OpenProgram", "Api-Key": "az-secret", "User-Agent": "openprogram/v1.2.3", "Authorization": ""} {
		if v := got.header.Get(k); v != want {
			t.Errorf("header %s = %q, want %q", k, v, want)
		}
	}

	hc := cfg.Config
	if a := hc.Agent; a.MaxSteps != 7 || a.ContextTokens != 16000 || hc.Model.MaxOutputTokens != 512 || a.TurnTimeout != 10*time.Minute {
		t.Errorf("host config = steps %d, context %d, output %d, turn %s", a.MaxSteps, a.ContextTokens, hc.Model.MaxOutputTokens, a.TurnTimeout)
	}

	// Unset: the defaults (20 steps, no budget, no turn timeout).
	hc = configOf(t, nil).Config
	if a := hc.Agent; a.MaxSteps != runtime.DefaultMaxSteps || a.ContextTokens != 0 || a.TurnTimeout != 0 {
		t.Errorf("default host config = %+v", a)
	}
	if pc := configOf(t, nil).Model; pc.Temperature != nil || pc.TopP != nil || pc.MaxOutputTokens != 0 || pc.Headers != nil ||
		pc.Timeout != runtime.DefaultModelTimeout {
		t.Errorf("default provider config = %+v", pc)
	}
}
