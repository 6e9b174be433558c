package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/sessions"
)

// setText sets key k from its command-line text v, as `config set` does.
func setText(c *Config, k, v string) error {
	key, ok := lookupKey(k)
	if !ok {
		return fmt.Errorf("unknown key %s", k)
	}
	val, err := parseValue(key, v)
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
	if err := checkModelSettings(configOf(t, map[string]string{"model.provider": "anthropic", "model.temperature": "0.5"})); err == nil ||
		!strings.Contains(err.Error(), "rejects temperature") {
		t.Errorf("anthropic + temperature = %v, want a refusal with the reason", err)
	}
	if err := checkModelSettings(configOf(t, map[string]string{"model.provider": "openai", "model.temperature": "0.5", "model.top_p": "0.9"})); err != nil {
		t.Errorf("openai + temperature + top_p = %v", err)
	}
	// `config set` runs the check, in either order, and saves nothing.
	env := Env{"OPENPROGRAM_HOME=" + filepath.Join(t.TempDir(), "state")}
	run := func(args ...string) (int, string) {
		var out, errb strings.Builder
		code := Main(t.Context(), &App{Stdout: &out, Stderr: &errb, Env: env, Version: "test"}, args)
		return code, errb.String()
	}
	if code, _ := run("config", "set", "model.temperature", "0.5"); code != 0 {
		t.Fatal("config set model.temperature failed")
	}
	if code, stderr := run("config", "set", "model.provider", "anthropic"); code == 0 || !strings.Contains(stderr, "rejects temperature") {
		t.Errorf("config set model.provider anthropic after a temperature = exit %d, %q; want a refusal with the reason", code, stderr)
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
	app := &App{Env: Env{"AZ_KEY=az-secret"}, Version: "v1.2.3"}
	p, err := modelProvider(app, cfg)
	if err != nil {
		t.Fatalf("modelProvider: %v", err)
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

func TestSessionsShowUsage(t *testing.T) {
	state := t.TempDir()
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	st, err := sessions.Open(ctx, "sqlite:"+filepath.Join(state, DatabaseFileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "s1", AgentID: "main", Source: "mcp"}); err != nil {
		t.Fatal(err)
	}
	// The usage key of the runtime's stored message metadata.
	type usageMeta struct {
		Usage *provider.Usage `json:"usage"`
	}
	meta := func(m usageMeta) json.RawMessage {
		data, _ := json.Marshal(m)
		return data
	}
	if _, err := st.AppendMessages(ctx, "s1", "", []sessions.NewMessage{
		{Role: sessions.RoleUser, Content: "q"},
		{Role: sessions.RoleAssistant, Content: "calling", Metadata: meta(usageMeta{Usage: &provider.Usage{InputTokens: 100, OutputTokens: 10}})},
		{Role: sessions.RoleAssistant, Content: "a", Metadata: meta(usageMeta{Usage: &provider.Usage{InputTokens: 150, OutputTokens: 5}})},
	}, true); err != nil {
		t.Fatal(err)
	}
	st.Close()

	run := func(args ...string) string {
		var out, errb strings.Builder
		app := &App{Stdout: &out, Stderr: &errb, Env: Env{"OPENPROGRAM_HOME=" + state}, Version: "test"}
		if code := Main(ctx, app, args); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	if out := run("sessions", "show", "s1"); !strings.Contains(out, "tokens: 250 input, 15 output over 2 model calls") {
		t.Errorf("sessions show lacks the usage totals:\n%s", out)
	}
	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(run("sessions", "show", "s1", "--json")), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if diff := cmp.Diff(map[string]any{"input_tokens": 150.0, "output_tokens": 5.0}, lines[2]["usage"]); diff != "" || lines[0]["usage"] != nil {
		t.Errorf("JSON usage (-want +got):\n%s", diff)
	}
}
