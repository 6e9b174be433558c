package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
)

func mustParse(t *testing.T, s string) *scripted.Script {
	t.Helper()
	sc, err := scripted.Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return sc
}

func TestReplay(t *testing.T) {
	p := scripted.New(mustParse(t, `{"turns":[
		{"text":"Let me look.","tool_calls":[{"name":"read","arguments":{"path":"a.txt"}},{"id":"mine","name":"list"}]},
		{"tool_calls":[{"name":"glob","arguments":{"pattern":"*"}}]},
		{"text":"Done  now."}
	]}`))
	rec := p.Record()
	type call struct {
		resp   provider.Response
		deltas []string
	}
	var got []call
	for i := 0; i < 4; i++ {
		var c call
		resp, err := p.Stream(t.Context(), provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "q"}}}, func(d provider.Delta) {
			c.deltas = append(c.deltas, d.Text)
		})
		if err != nil {
			t.Fatalf("Stream %d: %v", i, err)
		}
		c.resp = resp
		got = append(got, c)
	}
	want := []call{
		{provider.Response{Text: "[scripted] Let me look.", StopReason: provider.StopToolUse, ToolCalls: []provider.ToolCall{
			{ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"a.txt"}`)},
			{ID: "mine", Name: "list", Arguments: json.RawMessage(`{}`)},
		}}, []string{"[scripted] ", "Let ", "me ", "look."}},
		{provider.Response{StopReason: provider.StopToolUse, ToolCalls: []provider.ToolCall{
			{ID: "call_3", Name: "glob", Arguments: json.RawMessage(`{"pattern":"*"}`)},
		}}, nil},
		{provider.Response{Text: "[scripted] Done  now.", StopReason: provider.StopEnd}, []string{"[scripted] ", "Done  ", "now."}},
		{provider.Response{Text: scripted.Exhausted, StopReason: provider.StopEnd}, []string{"[scripted] ", "script ", "exhausted"}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(call{})); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	if n := len(rec.Requests()); n != 4 || p.Remaining() != 0 {
		t.Errorf("Requests() has %d entries, Remaining() = %d; want 4, 0", n, p.Remaining())
	}
	if p.Name() != "scripted" {
		t.Errorf("Name() = %q", p.Name())
	}
}

func TestRequestsAreCopies(t *testing.T) {
	p := scripted.New(mustParse(t, `{"turns":[{"text":"a"}]}`))
	rec := p.Record()
	msgs := []provider.Message{{Role: provider.RoleUser, Content: "original"}}
	if _, err := p.Stream(t.Context(), provider.Request{System: "sys", Messages: msgs}, nil); err != nil {
		t.Fatal(err)
	}
	msgs[0].Content = "changed"
	reqs := rec.Requests()
	reqs[0].Messages[0].Content = "changed again"
	if got := rec.Requests()[0]; got.Messages[0].Content != "original" || got.System != "sys" {
		t.Errorf("recorded request = %+v, want the original", got)
	}
}

func TestErrorTurn(t *testing.T) {
	p := scripted.New(mustParse(t, `{"turns":[{"error":{"class":"rate_limit","message":"slow down","retry_after_ms":1500}}]}`))
	_, err := p.Stream(t.Context(), provider.Request{}, nil)
	pe, ok := errors.AsType[*provider.Error](err)
	if !ok || pe.Class != provider.ClassRateLimit || pe.RetryAfter != 1500*time.Millisecond || !strings.Contains(err.Error(), "[scripted] slow down") {
		t.Errorf("Stream error = %v, want a scripted rate limit error", err)
	}
}

func TestDelayAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := scripted.New(mustParse(t, `{"turns":[{"text":"one two three","delay_ms":100},{"text":"next"}]}`))
		ctx, cancel := context.WithCancel(t.Context())
		var deltas []string
		start := time.Now()
		time.AfterFunc(250*time.Millisecond, cancel)
		_, err := p.Stream(ctx, provider.Request{}, func(d provider.Delta) { deltas = append(deltas, d.Text) })
		if !errors.Is(err, context.Canceled) || provider.ClassOf(err) != provider.ClassCancelled {
			t.Errorf("Stream error = %v, want cancelled", err)
		}
		if elapsed := time.Since(start); elapsed != 250*time.Millisecond {
			t.Errorf("Stream returned after %s, want 250ms (at the cancel)", elapsed)
		}
		if diff := cmp.Diff([]string{"[scripted] ", "one "}, deltas); diff != "" {
			t.Errorf("deltas before cancel (-want +got):\n%s", diff)
		}
		// The cancelled turn is consumed; the next call gets the next turn.
		resp, err := p.Stream(t.Context(), provider.Request{}, nil)
		if err != nil || resp.Text != "[scripted] next" {
			t.Errorf("next Stream = %q, %v; want the next turn", resp.Text, err)
		}
	})
}

func TestCancelledBeforeCall(t *testing.T) {
	p := scripted.New(mustParse(t, `{"turns":[{"text":"a"}]}`))
	rec := p.Record()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := p.Stream(ctx, provider.Request{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Stream error = %v, want cancelled", err)
	}
	if p.Remaining() != 1 || len(rec.Requests()) != 0 {
		t.Errorf("a call refused before it started consumed the script")
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{"turns":[{"tool_calls":[{"arguments":{}}]}]}`, "name is empty"},
		{`{"turns":[{"tool_calls":[{"name":"x","arguments":[1]}]}]}`, "arguments must be a JSON object"},
		{`{"turns":[{"delay_ms":-1}]}`, "delay_ms is negative"},
		{`{"turns":[{"error":{"class":"cosmic"}}]}`, `unknown error class "cosmic"`},
		{`{"turns":[{"txt":"typo"}]}`, "unknown field"},
		{`not json`, "parse script"},
	}
	for _, tt := range tests {
		_, err := scripted.Parse([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) = %v, want error containing %q", tt.in, err, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, []byte(`{"turns":[{"text":"hi"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := scripted.Load(path)
	if err != nil || len(s.Turns) != 1 {
		t.Fatalf("Load = %+v, %v", s, err)
	}
	if _, err := scripted.Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load(missing) = nil error")
	}
}

// A provider without a recorder keeps nothing of what it served: a server
// answering with it holds no growing record of requests.
func TestKeepsNoRequestsUnlessRecorded(t *testing.T) {
	p := scripted.New(nil)
	heap := func() uint64 {
		goruntime.GC()
		var ms goruntime.MemStats
		goruntime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for i := range 100 {
		msgs := []provider.Message{{Role: provider.RoleUser, Content: strings.Repeat(string(rune('a'+i%26)), 1<<20)}}
		if _, err := p.Stream(t.Context(), provider.Request{Messages: msgs}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// 100 requests of 1 MiB: a record of them would hold 100 MiB.
	if grown := int64(heap()) - int64(before); grown > 20<<20 {
		t.Errorf("the heap grew by %d MiB over 100 requests of 1 MiB served without a recorder", grown>>20)
	}
	goruntime.KeepAlive(p)

	// Attached, a recorder holds what is served from then on.
	rec := p.Record()
	if _, err := p.Stream(t.Context(), provider.Request{System: "after"}, nil); err != nil {
		t.Fatal(err)
	}
	if reqs := rec.Requests(); len(reqs) != 1 || reqs[0].System != "after" {
		t.Errorf("recorded %+v, want the one request served after Record", reqs)
	}
}
