package runtime_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/openai"
	"github.com/openprogram/openprogram/runtime/provider/providertest"
)

// Turns against a fake OpenAI-compatible server speaking the real streaming
// wire format.

func openAIRuntime(t *testing.T, srv *providertest.Server, opts runtime.Options, settings ...provider.Settings) *runtime.Runtime {
	t.Helper()
	var set provider.Settings
	if len(settings) > 0 {
		set = settings[0]
	}
	p, err := openai.New(openai.Options{Model: "gpt-test", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Settings: set})
	if err != nil {
		t.Fatal(err)
	}
	opts.Provider = provider.WithRetry(p, provider.RetryPolicy{BaseDelay: time.Millisecond})
	return runtime.New(opts)
}

type chatRequest struct {
	Messages []map[string]any `json:"messages"`
	Tools    []map[string]any `json:"tools"`
}

func TestOpenAIPlainReply(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	srv := providertest.New(t, providertest.Reply{Body: providertest.OpenAIText("gpt-test", "Hello", " from", " the server.")})
	rt := openAIRuntime(t, srv, runtime.Options{Store: store})
	res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "hi"))
	if err != nil || res.Failed || res.Text != "Hello from the server." {
		t.Fatalf("ProcessUserTurn = %+v, %v", res, err)
	}
	var body chatRequest
	if err := srv.Requests()[0].JSON(&body); err != nil {
		t.Fatal(err)
	}
	if len(body.Messages) != 2 || body.Messages[0]["role"] != "system" || body.Messages[1]["role"] != "user" {
		t.Errorf("wire messages = %v", body.Messages)
	}
	got := branch(t, store, "s1")
	if len(got) != 2 || got[1].Content != "Hello from the server." || got[1].Meta.Provider != "openai" {
		t.Errorf("stored branch = %+v", got)
	}
}

func TestOpenAIToolCall(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	rec := &recorder{}
	srv := providertest.New(t,
		providertest.Reply{Body: providertest.OpenAIToolCalls("gpt-test", "Let me check.",
			providertest.Call{ID: "call_ok", Name: "memory_search", Arguments: `{"query":"notes"}`},
			providertest.Call{ID: "call_no", Name: "bash", Arguments: `{"query":"ls"}`})},
		providertest.Reply{Body: providertest.OpenAIText("gpt-test", "Done.")},
	)
	rt := openAIRuntime(t, srv, runtime.Options{Store: store,
		Registry: registry(t, rec.tool("memory_search", authz.CapMemoryRead, nil), rec.tool("bash", authz.CapProcessExec, nil))})
	res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "look"))
	if err != nil || res.Failed || res.Text != "Done." {
		t.Fatalf("ProcessUserTurn = %+v, %v", res, err)
	}
	if diff := cmp.Diff([]string{`{"query":"notes"}`}, rec.Calls()); diff != "" {
		t.Errorf("tool runs (-want +got):\n%s", diff)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(reqs))
	}
	var first, second chatRequest
	if err := reqs[0].JSON(&first); err != nil {
		t.Fatal(err)
	}
	if err := reqs[1].JSON(&second); err != nil {
		t.Fatal(err)
	}
	if len(first.Tools) != 1 || first.Tools[0]["function"].(map[string]any)["name"] != "memory_search" {
		t.Errorf("offered tools = %v, want memory_search only", first.Tools)
	}
	msgs := second.Messages
	if len(msgs) != 5 {
		t.Fatalf("second request has %d messages, want system, user, assistant, 2 tool results: %v", len(msgs), msgs)
	}
	if msgs[3]["role"] != "tool" || msgs[3]["tool_call_id"] != "call_ok" || msgs[3]["content"] != "result of memory_search" {
		t.Errorf("first tool result on the wire = %v", msgs[3])
	}
	denial := branch(t, store, "s1")[3].Content
	if msgs[4]["role"] != "tool" || msgs[4]["tool_call_id"] != "call_no" || msgs[4]["content"] != denial {
		t.Errorf("denied tool result on the wire = %v, want the stored denial %q", msgs[4], denial)
	}
}

func TestOpenAICancelWhileStreaming(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	srv := providertest.New(t, providertest.Reply{Body: providertest.OpenAIText("gpt-test", "partial", " never", " sent"), HoldAfter: 2})
	rt := openAIRuntime(t, srv, runtime.Options{Store: store})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-srv.Held()
		cancel()
	}()
	start := time.Now()
	res, err := rt.ProcessUserTurn(ctx, mcpRequest(t, "s1", "hi"))
	if !errors.Is(err, context.Canceled) || res != (runtime.TurnResult{}) {
		t.Fatalf("ProcessUserTurn = %+v, %v; want zero and context.Canceled", res, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("turn took %s to stop", d)
	}
	wctx, wcancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer wcancel()
	if !srv.WaitAborted(wctx) {
		t.Error("the server never saw the request aborted")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1 (no retry after cancel)", n)
	}
	userOnly(t, store, "s1", "hi")
	checkReleased(t, store, "s1")
}

func TestOpenAIServerErrorFailsTurn(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	srv := providertest.New(t, providertest.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided: sk-abc","type":"invalid_request_error","code":"invalid_api_key"}}`})
	rt := openAIRuntime(t, srv, runtime.Options{Store: store})
	res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "hi"))
	if err != nil || !res.Failed || res.ErrorClass != "auth" {
		t.Fatalf("ProcessUserTurn = %+v, %v; want a failed auth turn", res, err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server saw %d requests, want 1 (auth is not retried)", n)
	}
}

// A server that stalls ends the turn failed, with a text naming the
// timeout, within model.timeout plus a margin; the retries do not stretch it.
func TestOpenAIStallFailsTurn(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, stall := range []struct {
		name  string
		reply providertest.Reply
	}{
		{"before headers", providertest.Reply{Stall: true}},
		{"mid-stream", providertest.Reply{Body: providertest.OpenAIText("gpt-test", "partial", " never", " sent"), HoldAfter: 2}},
	} {
		t.Run(stall.name, func(t *testing.T) {
			store := openStore(t, "")
			createSession(t, store, "s1")
			srv := providertest.New(t, stall.reply, stall.reply, stall.reply, stall.reply)
			rt := openAIRuntime(t, srv, runtime.Options{Store: store}, provider.Settings{Timeout: timeout})
			start := time.Now()
			res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "hi"))
			elapsed := time.Since(start)
			if err != nil || !res.Failed || res.ErrorClass != string(provider.ClassTimeout) {
				t.Fatalf("ProcessUserTurn = %+v, %v; want a failed timeout turn", res, err)
			}
			if !strings.Contains(res.Text, "timed out") || !strings.Contains(res.Text, "model.timeout") {
				t.Errorf("failure text %q does not say the model timed out", res.Text)
			}
			if elapsed > timeout+2*time.Second {
				t.Errorf("the turn took %s, want under %s", elapsed, timeout+2*time.Second)
			}
			checkReleased(t, store, "s1")
		})
	}
}

// model.turn_timeout bounds the whole turn, retries included: a server that
// keeps failing with a retryable error ends the turn at the deadline.
func TestTurnTimeoutBoundsRetries(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	busy := providertest.Reply{Status: 503, Body: `{"error":{"message":"busy","type":"server_error"}}`, Header: http.Header{"Retry-After": {"0.2"}}}
	srv := providertest.New(t, busy, busy, busy, busy, busy, busy)
	const turnTimeout = 500 * time.Millisecond
	p, err := openai.New(openai.Options{Model: "gpt-test", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	rt := runtime.New(runtime.Options{Store: store, TurnTimeout: turnTimeout,
		Provider: provider.WithRetry(p, provider.RetryPolicy{MaxAttempts: 100, BaseDelay: 200 * time.Millisecond, MaxDelay: 200 * time.Millisecond})})
	start := time.Now()
	res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "hi"))
	elapsed := time.Since(start)
	if err != nil || !res.Failed {
		t.Fatalf("ProcessUserTurn = %+v, %v; want a failed turn", res, err)
	}
	if elapsed > turnTimeout+2*time.Second {
		t.Errorf("the turn took %s, want under %s", elapsed, turnTimeout+2*time.Second)
	}
	if n := len(srv.Requests()); n > 4 {
		t.Errorf("server saw %d requests within a %s turn", n, turnTimeout)
	}
}
