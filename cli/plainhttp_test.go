package cli_test

import (
	"net"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/runtime/provider/providertest"
)

// TestPlainHTTPKey: the model key never goes over plain http:// to a host
// that is not this machine (here a real server on a non-loopback address
// of it) unless model.allow_unencrypted_key is true; prompt and doctor say
// why and how, and nothing reaches the server. The opt-in comes from
// config.json or, for an MCP bundle, OPENPROGRAM_MODEL_ALLOW_UNENCRYPTED_KEY=true;
// the bundle's unticked box ("false") revokes nothing.
func TestPlainHTTPKey(t *testing.T) {
	ok := providertest.Reply{Body: providertest.OpenAIText("m", "ok")}
	srv := providertest.NewAt(t, net.JoinHostPort(providertest.NonLoopbackIP(t), "0"), ok, ok, ok, ok)
	env, _, _ := healthy(t)
	mustCLI(t, env, "config", "set", "model.provider", "openai")
	mustCLI(t, env, "config", "set", "model.name", "m")
	// What the .mcpb bundle's base-URL field becomes.
	env = append(env, "OPENAI_API_KEY=sk-plain-secret", "OPENPROGRAM_MODEL_BASE_URL="+srv.URL+"/v1")
	how := "openprogram config set model.allow_unencrypted_key true"

	r := runCLI(t, env, "prompt", "hello")
	if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "unencrypted") || !strings.Contains(r.stdout+r.stderr, how) {
		t.Errorf("prompt = exit %d, %q %q; want a refusal saying why and %q", r.code, r.stdout, r.stderr, how)
	}
	mp := findCheck(t, parseDoctor(t, runCLI(t, env, "doctor").stdout), "model provider")
	if mp.status == "ok" || !strings.Contains(mp.info, "unencrypted") || !strings.Contains(mp.info, how) {
		t.Errorf("doctor's model check = %+v, want the same refusal", mp)
	}
	if n := srv.Connections(); n != 0 {
		t.Errorf("%d connections reached %s before the opt-in", n, srv.URL)
	}
	if strings.Contains(r.stdout+r.stderr+mp.info, "sk-plain-secret") {
		t.Error("the refusal shows the key")
	}

	r = runCLI(t, append(env, "OPENPROGRAM_MODEL_ALLOW_UNENCRYPTED_KEY=false"), "prompt", "hello")
	if r.code != 1 || srv.Connections() != 0 {
		t.Errorf("prompt with the override false = exit %d, %d connections; want the refusal", r.code, srv.Connections())
	}
	if got := mustCLI(t, append(env, "OPENPROGRAM_MODEL_ALLOW_UNENCRYPTED_KEY=true"), "prompt", "hello"); !strings.Contains(got, "ok") {
		t.Errorf("prompt with the override true = %q, want the server's reply", got)
	}

	mustCLI(t, env, "config", "set", "model.allow_unencrypted_key", "true")
	if got := strings.TrimSpace(mustCLI(t, env, "config", "get", "--raw", "model.allow_unencrypted_key")); got != "true" {
		t.Errorf("config get model.allow_unencrypted_key = %q, want true", got)
	}
	mp = findCheck(t, parseDoctor(t, runCLI(t, env, "doctor").stdout), "model provider")
	if mp.status != "ok" {
		t.Errorf("doctor's model check with the opt-in = %+v, want ok", mp)
	}
	if got := mustCLI(t, append(env, "OPENPROGRAM_MODEL_ALLOW_UNENCRYPTED_KEY=false"), "prompt", "hello"); !strings.Contains(got, "ok") {
		t.Errorf("prompt with config.json's opt-in and the override false = %q, want the server's reply", got)
	}
	for _, req := range srv.Requests() {
		if req.Header.Get("Authorization") != "Bearer sk-plain-secret" {
			t.Errorf("request with Authorization %q, want the key", req.Header.Get("Authorization"))
		}
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("the server got %d requests, want 3 (two prompts and doctor's probe, all opted in)", n)
	}
	r = runCLI(t, append(env, "OPENPROGRAM_MODEL_ALLOW_UNENCRYPTED_KEY=yes"), "prompt", "hello")
	if r.code != 1 || !strings.Contains(r.stderr, "OPENPROGRAM_MODEL_ALLOW_UNENCRYPTED_KEY") {
		t.Errorf("prompt with the override yes = exit %d, stderr %q; want a refusal naming the variable", r.code, r.stderr)
	}
}
