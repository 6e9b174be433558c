package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const echoSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {"text": {"type": "string", "minLength": 1}, "n": {"type": "integer", "minimum": 0}},
  "required": ["text"],
  "additionalProperties": false
}`

func newTool(name string, run func(ctx context.Context, callID string, args json.RawMessage, update func(string)) (tool.Result, error)) *tool.Func {
	return &tool.Func{ToolName: name, Desc: "test tool", Schema: json.RawMessage(echoSchema), Cap: authz.CapFSRead, Run: run}
}

func echo() *tool.Func {
	return newTool("echo", func(_ context.Context, _ string, args json.RawMessage, _ func(string)) (tool.Result, error) {
		var a struct{ Text string }
		if err := json.Unmarshal(args, &a); err != nil {
			return tool.Result{}, err
		}
		return tool.TextResult(a.Text), nil
	})
}

func TestRegistryRegisterGetList(t *testing.T) {
	r := tool.NewRegistry()
	for _, n := range []string{"zeta", "alpha", "mid"} {
		f := echo()
		f.ToolName = n
		if err := r.Register(f); err != nil {
			t.Fatalf("Register(%q) = %v", n, err)
		}
	}
	if diff := cmp.Diff([]string{"zeta", "alpha", "mid"}, r.Names()); diff != "" {
		t.Errorf("Names() mismatch (-want +got):\n%s", diff)
	}
	var listed []string
	for _, tl := range r.List() {
		listed = append(listed, tl.Name())
	}
	if diff := cmp.Diff(r.Names(), listed); diff != "" {
		t.Errorf("List() order mismatch (-want +got):\n%s", diff)
	}
	if got, ok := r.Get("alpha"); !ok || got.Name() != "alpha" {
		t.Errorf("Get(alpha) = %v, %v", got, ok)
	}
	if _, ok := r.Get("missing"); ok {
		t.Errorf("Get(missing) found a tool")
	}
	// List returns a fresh slice.
	l := r.List()
	l[0] = nil
	if r.List()[0] == nil {
		t.Errorf("List() shares its backing array with the registry")
	}
}

func TestRegistryDuplicateIsError(t *testing.T) {
	r := tool.NewRegistry()
	first := echo()
	if err := r.Register(first); err != nil {
		t.Fatal(err)
	}
	second := echo()
	second.Desc = "second"
	err := r.Register(second)
	if !errors.Is(err, tool.ErrDuplicate) {
		t.Fatalf("Register(duplicate) = %v, want ErrDuplicate", err)
	}
	got, _ := r.Get("echo")
	if got.Description() != "test tool" {
		t.Errorf("duplicate replaced the first tool: description %q", got.Description())
	}
	if n := len(r.List()); n != 1 {
		t.Errorf("len(List()) = %d, want 1", n)
	}
}

func TestRegistryRejectsInvalidSchemas(t *testing.T) {
	cases := map[string]string{
		"empty":              ``,
		"not json":           `{"type":`,
		"array":              `[]`,
		"trailing data":      `{"type":"object"} {}`,
		"not object type":    `{"type":"string"}`,
		"no type":            `{"properties":{}}`,
		"unknown keyword":    `{"type":"object","requried":["a"]}`,
		"bad type name":      `{"type":"object","properties":{"a":{"type":"strin"}}}`,
		"negative minLength": `{"type":"object","properties":{"a":{"type":"string","minLength":-1}}}`,
		"bad pattern":        `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`,
		"required not array": `{"type":"object","required":"a"}`,
		"duplicate required": `{"type":"object","required":["a","a"]}`,
		"other draft":        `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`,
		"dangling ref":       `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`,
		"subschema number":   `{"type":"object","properties":{"a":3}}`,
		"empty anyOf":        `{"type":"object","anyOf":[]}`,
		"zero multipleOf":    `{"type":"object","properties":{"a":{"type":"number","multipleOf":0}}}`,
		"bad patternProps":   `{"type":"object","patternProperties":{"(":{}}}`,
	}
	for name, schema := range cases {
		t.Run(name, func(t *testing.T) {
			f := echo()
			f.Schema = json.RawMessage(schema)
			r := tool.NewRegistry()
			err := r.Register(f)
			var se *tool.SchemaError
			if !errors.As(err, &se) {
				t.Fatalf("Register(schema %s) = %v, want *SchemaError", schema, err)
			}
			if len(r.List()) != 0 {
				t.Errorf("a tool with an invalid schema was registered")
			}
		})
	}
}

func TestRegistryAcceptsValidSchemas(t *testing.T) {
	for _, schema := range []string{
		echoSchema,
		`{"type":"object"}`,
		`{"type":"object","properties":{},"additionalProperties":false}`,
		`{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/s"}},"x-note":"ext"}`,
		`{"type":"object","properties":{"a":{"type":["string","null"],"enum":["x",null]},"b":{"type":"array","items":{"type":"integer"},"minItems":1}}}`,
	} {
		f := echo()
		f.Schema = json.RawMessage(schema)
		if err := tool.NewRegistry().Register(f); err != nil {
			t.Errorf("Register(schema %s) = %v, want nil", schema, err)
		}
	}
}

func TestRegistryRejectsBadNamesAndCapabilities(t *testing.T) {
	for _, name := range []string{"", "has space", "slash/name", strings.Repeat("a", 65)} {
		f := echo()
		f.ToolName = name
		if err := tool.NewRegistry().Register(f); err == nil {
			t.Errorf("Register(name %q) = nil, want error", name)
		}
	}
	f := echo()
	f.Cap = "root.everything"
	if err := tool.NewRegistry().Register(f); err == nil {
		t.Errorf("Register(capability root.everything) = nil, want error")
	}
	if err := tool.NewRegistry().Register(nil); err == nil {
		t.Errorf("Register(nil) = nil, want error")
	}
}

func TestValidateArgs(t *testing.T) {
	cases := []struct {
		args        string
		wantErr     bool
		path, kword string
	}{
		{args: `{"text":"hi"}`},
		{args: `{"text":"hi","n":3}`},
		{args: ``, wantErr: true, path: "$.text", kword: "required"},
		{args: `{}`, wantErr: true, path: "$.text", kword: "required"},
		{args: `{"n":1}`, wantErr: true, path: "$.text", kword: "required"},
		{args: `{"text":"a","n":12345678901234567890}`},
		{args: `{"text":"a","n":1e400}`},
		{args: `{"text":"a","n":1.0000000000000000001}`, wantErr: true, path: "$.n", kword: "type"},
		{args: `{"text":"a","a b":1}`, wantErr: true, path: `$["a b"]`, kword: "additionalProperties"},
		{args: `{"text":"a"} {}`, wantErr: true, path: "$", kword: "json"},
		{args: `{"text":3}`, wantErr: true, path: "$.text", kword: "type"},
		{args: `{"text":""}`, wantErr: true, path: "$.text", kword: "minLength"},
		{args: `{"text":"a","n":-1}`, wantErr: true, path: "$.n", kword: "minimum"},
		{args: `{"text":"a","n":1.5}`, wantErr: true, path: "$.n", kword: "type"},
		{args: `{"text":"a","extra":1}`, wantErr: true, path: "$.extra", kword: "additionalProperties"},
		{args: `{"text":"","extra":1}`, wantErr: true, path: "$.extra", kword: "additionalProperties"},
		{args: `{"text":`, wantErr: true, path: "$", kword: "json"},
		{args: `null`, wantErr: true, path: "$", kword: "type"},
		{args: `[1]`, wantErr: true, path: "$", kword: "type"},
	}
	for _, c := range cases {
		err := tool.ValidateArgs(echo(), json.RawMessage(c.args))
		if !c.wantErr {
			if err != nil {
				t.Errorf("ValidateArgs(%s) = %v, want nil", c.args, err)
			}
			continue
		}
		var ae *tool.ArgumentsError
		if !errors.As(err, &ae) {
			t.Errorf("ValidateArgs(%s) = %v, want *ArgumentsError", c.args, err)
			continue
		}
		if ae.Path != c.path || ae.Keyword != c.kword || ae.Tool != "echo" {
			t.Errorf("ValidateArgs(%s) = {tool %q path %q keyword %q}, want {echo %q %q}", c.args, ae.Tool, ae.Path, ae.Keyword, c.path, c.kword)
		}
	}
}

func TestExecutorSuccess(t *testing.T) {
	res := tool.NewExecutor(nil).Execute(context.Background(), echo(), "c1", json.RawMessage(`{"text":"hello"}`), nil)
	if diff := cmp.Diff(tool.TextResult("hello"), res); diff != "" {
		t.Errorf("Execute mismatch (-want +got):\n%s", diff)
	}
}

func TestExecutorInvalidArgumentsNeverRunsTool(t *testing.T) {
	f := newTool("strict", func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
		t.Fatal("tool executed with invalid arguments")
		return tool.Result{}, nil
	})
	res := tool.NewExecutor(nil).Execute(context.Background(), f, "c1", json.RawMessage(`{"text":1}`), nil)
	if !res.IsError || res.ReasonCode() != tool.ReasonInvalidArguments {
		t.Errorf("Execute(invalid) = %+v, want IsError INVALID_ARGUMENTS", res)
	}
}

func TestExecutorToolErrorAndPanic(t *testing.T) {
	var logBuf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(&lockedWriter{w: &logBuf, mu: &mu}, nil))
	ex := tool.NewExecutor(&tool.ExecutorOptions{Logger: logger})
	failing := newTool("failing", func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
		return tool.Result{}, errors.New("disk on fire")
	})
	res := ex.Execute(context.Background(), failing, "c1", json.RawMessage(`{"text":"x"}`), nil)
	if !res.IsError || res.ReasonCode() != tool.ReasonToolError || !strings.Contains(res.Text(), "disk on fire") {
		t.Errorf("Execute(error) = %+v, want IsError TOOL_ERROR mentioning the error", res)
	}
	panicking := newTool("panicking", func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
		panic("boom")
	})
	res = ex.Execute(context.Background(), panicking, "c2", json.RawMessage(`{"text":"x"}`), nil)
	if !res.IsError || res.ReasonCode() != tool.ReasonPanic {
		t.Errorf("Execute(panic) = %+v, want IsError PANIC", res)
	}
	mu.Lock()
	logged := logBuf.String()
	mu.Unlock()
	if !strings.Contains(logged, "runtime tool panicked") || !strings.Contains(logged, "tool_test.go") {
		t.Errorf("panic log lacks message or stack: %s", logged)
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestExecutorIsErrorWithoutContentGetsText(t *testing.T) {
	f := newTool("quiet", func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
		return tool.Result{IsError: true}, nil
	})
	res := tool.NewExecutor(nil).Execute(context.Background(), f, "c", json.RawMessage(`{"text":"x"}`), nil)
	if !res.IsError || res.Text() == "" {
		t.Errorf("Execute = %+v, want IsError with text", res)
	}
}

func TestExecutorTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTool("slow", func(ctx context.Context, _ string, _ json.RawMessage, _ func(string)) (tool.Result, error) {
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		})
		ex := tool.NewExecutor(&tool.ExecutorOptions{Timeout: 5 * time.Second})
		start := time.Now()
		res := ex.Execute(context.Background(), f, "c", json.RawMessage(`{"text":"x"}`), nil)
		if got := time.Since(start); got != 5*time.Second {
			t.Errorf("Execute took %v, want the 5s timeout", got)
		}
		want := tool.Result{
			Content: []tool.Content{tool.Text("tool slow timed out")},
			IsError: true,
			Reason:  "TIMEOUT",
			Details: map[string]any{"timeout": true},
		}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("Execute(timeout) mismatch (-want +got):\n%s", diff)
		}
	})
}

type hinted struct {
	*tool.Func
	hint time.Duration
}

func (h hinted) TimeoutHint(json.RawMessage) time.Duration { return h.hint }

func TestExecutorUsesTimeoutHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTool("hinted", func(ctx context.Context, _ string, _ json.RawMessage, _ func(string)) (tool.Result, error) {
			select {
			case <-time.After(time.Minute):
				return tool.TextResult("done"), nil
			case <-ctx.Done():
				return tool.Result{}, ctx.Err()
			}
		})
		ex := tool.NewExecutor(&tool.ExecutorOptions{Timeout: time.Second})
		res := ex.Execute(context.Background(), hinted{f, 2 * time.Minute}, "c", json.RawMessage(`{"text":"x"}`), nil)
		if res.IsError || res.Text() != "done" {
			t.Errorf("Execute with a 2m hint = %+v, want done", res)
		}
	})
}

func TestExecutorToolResultAfterTimeoutGetsReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTool("self-reporting", func(ctx context.Context, _ string, _ json.RawMessage, _ func(string)) (tool.Result, error) {
			<-ctx.Done()
			return tool.Result{Content: []tool.Content{tool.Text("partial output")}, IsError: true}, nil
		})
		res := tool.NewExecutor(&tool.ExecutorOptions{Timeout: time.Second}).Execute(context.Background(), f, "c", json.RawMessage(`{"text":"x"}`), nil)
		if !res.IsError || res.ReasonCode() != tool.ReasonTimeout || res.Details["timeout"] != true || res.Text() != "partial output" {
			t.Errorf("Execute = %+v, want the tool's partial output marked TIMEOUT", res)
		}
	})
}

func TestExecutorCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{})
		f := newTool("waits", func(ctx context.Context, _ string, _ json.RawMessage, _ func(string)) (tool.Result, error) {
			close(started)
			<-ctx.Done()
			return tool.Result{}, ctx.Err()
		})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		res := tool.NewExecutor(nil).Execute(ctx, f, "c", json.RawMessage(`{"text":"x"}`), nil)
		if !res.IsError || res.ReasonCode() != tool.ReasonCancelled || res.Details["cancelled"] != true {
			t.Errorf("Execute(cancelled) = %+v, want IsError CANCELLED", res)
		}
		// An already cancelled context never starts the tool.
		never := newTool("never", func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
			t.Fatal("tool started on a cancelled context")
			return tool.Result{}, nil
		})
		res = tool.NewExecutor(nil).Execute(ctx, never, "c", json.RawMessage(`{"text":"x"}`), nil)
		if res.ReasonCode() != tool.ReasonCancelled {
			t.Errorf("Execute(pre-cancelled) = %+v, want CANCELLED", res)
		}
	})
}

func TestExecutorAbandonsToolThatIgnoresContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		f := newTool("stubborn", func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
			<-release
			return tool.TextResult("too late"), nil
		})
		ex := tool.NewExecutor(&tool.ExecutorOptions{Timeout: time.Second, StopGrace: 3 * time.Second})
		start := time.Now()
		res := ex.Execute(context.Background(), f, "c", json.RawMessage(`{"text":"x"}`), nil)
		if got := time.Since(start); got != 4*time.Second {
			t.Errorf("Execute returned after %v, want timeout+grace = 4s", got)
		}
		if res.ReasonCode() != tool.ReasonTimeout {
			t.Errorf("Execute = %+v, want TIMEOUT", res)
		}
		close(release)
		synctest.Wait()
	})
}

func TestExecutorUpdatesInOrderAndNeverAfterReturn(t *testing.T) {
	late := make(chan func(string), 1)
	f := newTool("chatty", func(_ context.Context, _ string, _ json.RawMessage, update func(string)) (tool.Result, error) {
		for i := range 500 {
			update(fmt.Sprint(i))
		}
		late <- update
		return tool.TextResult("ok"), nil
	})
	var mu sync.Mutex
	var got []string
	res := tool.NewExecutor(nil).Execute(context.Background(), f, "c", json.RawMessage(`{"text":"x"}`), func(s string) {
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	})
	if res.IsError {
		t.Fatalf("Execute = %+v", res)
	}
	(<-late)("after return")
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 500 {
		t.Fatalf("got %d updates, want 500 (a late update must be dropped)", len(got))
	}
	for i, s := range got {
		if s != fmt.Sprint(i) {
			t.Fatalf("update %d = %q, want %d (out of order)", i, s, i)
		}
	}
}

func TestExecutorTruncatesHeadAndTail(t *testing.T) {
	big := strings.Repeat("a", 600) + strings.Repeat("m", 1000) + strings.Repeat("z", 600)
	f := newTool("big", func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
		return tool.TextResult(big), nil
	})
	res := tool.NewExecutor(&tool.ExecutorOptions{MaxResultBytes: 1000}).Execute(context.Background(), f, "c", json.RawMessage(`{"text":"x"}`), nil)
	text := res.Text()
	want := strings.Repeat("a", 500) + "\n[... 1200 bytes truncated ...]\n" + strings.Repeat("z", 500)
	if text != want {
		t.Errorf("truncated text = %q..., want head, marker, tail", text[:60])
	}
	if res.Details["truncated"] != true {
		t.Errorf("Details = %v, want truncated=true", res.Details)
	}
}

func TestExecutorCapsImages(t *testing.T) {
	f := newTool("img", func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
		return tool.Result{Content: []tool.Content{tool.Image(make([]byte, 2048), "image/png"), tool.Image([]byte{1}, "image/gif")}}, nil
	})
	ex := tool.NewExecutor(&tool.ExecutorOptions{MaxImageBytes: 1024})
	res := ex.Execute(context.Background(), f, "c", json.RawMessage(`{"text":"x"}`), nil)
	if !res.IsError || res.ReasonCode() != tool.ReasonResultTooLarge || len(res.Content) != 1 || res.Content[0].Type != tool.TypeText {
		t.Errorf("result with an image over the cap = %+v, want an IsError RESULT_TOO_LARGE text, no image", res)
	}
	small := newTool("img", func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
		return tool.Result{Content: []tool.Content{tool.Image(make([]byte, 1024), "image/png")}}, nil
	})
	if res := ex.Execute(context.Background(), small, "c", json.RawMessage(`{"text":"x"}`), nil); res.IsError || len(res.Content) != 1 {
		t.Errorf("result with an image at the cap = %+v, want it passed through", res)
	}
}

func TestCallInfoRoundTrip(t *testing.T) {
	if _, ok := tool.CallFrom(context.Background()); ok {
		t.Errorf("CallFrom(empty) found info")
	}
	w := filepath.Join(filepath.VolumeName(os.TempDir())+string(filepath.Separator), "w") // /w on Unix
	sp, err := authz.NewOwner("owner/install/0123456789abcdef", true, authz.Scope{WorkDirs: []string{w}})
	if err != nil {
		t.Fatal(err)
	}
	info := tool.CallInfo{SessionID: "s1", Speaker: sp}
	got, ok := tool.CallFrom(tool.WithCall(context.Background(), info))
	if !ok {
		t.Fatal("CallFrom lost the info")
	}
	if got.SessionID != "s1" || !got.Speaker.IsOwner() || got.Speaker.WorkDirs()[0] != w {
		t.Errorf("CallFrom = %+v, want session s1 and the owner in %s", got, w)
	}
}

func BenchmarkExecutorOverhead(b *testing.B) {
	f := newTool("noop", func(context.Context, string, json.RawMessage, func(string)) (tool.Result, error) {
		return tool.Result{}, nil
	})
	ex := tool.NewExecutor(nil)
	args := json.RawMessage(`{"text":"hello","n":3}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := ex.Execute(ctx, f, "c", args, nil); res.IsError {
			b.Fatal(res.Text())
		}
	}
}

func TestCallGuard(t *testing.T) {
	ex := tool.NewExecutor(nil)
	var sawKey any
	inner := newTool("inner", func(ctx context.Context, _ string, _ json.RawMessage, _ func(string)) (tool.Result, error) {
		sawKey = ctx.Value(guardKey{})
		return tool.TextResult("ran"), nil
	})
	run := func(args string, argsFirst bool, g tool.Guard) tool.Result {
		return ex.Run(context.Background(), inner, tool.Call{ID: "c", Args: json.RawMessage(args), Guard: g, ArgsFirst: argsFirst})
	}
	allow := func(ctx context.Context, _ string, _ json.RawMessage) (context.Context, tool.Result, bool) {
		return context.WithValue(ctx, guardKey{}, "set by guard"), tool.Result{}, true
	}
	if res := run(`{"text":"x"}`, false, allow); res.Text() != "ran" || sawKey != "set by guard" {
		t.Errorf("allowed guard: %+v, context value %v", res, sawKey)
	}
	deny := func(context.Context, string, json.RawMessage) (context.Context, tool.Result, bool) {
		return nil, tool.Result{}, false
	}
	// By default a denial wins over invalid arguments and is always an
	// error with text; with ArgsFirst the arguments are checked first.
	if res := run(`{"bogus":1}`, false, deny); !res.IsError || res.Text() == "" || res.ArgumentsRejected() {
		t.Errorf("denying guard = %+v, want IsError with text", res)
	}
	if res := run(`{"bogus":1}`, true, deny); !res.ArgumentsRejected() || res.ReasonCode() != tool.ReasonInvalidArguments {
		t.Errorf("denying guard, ArgsFirst = %+v, want the arguments rejected", res)
	}
	boom := func(context.Context, string, json.RawMessage) (context.Context, tool.Result, bool) {
		panic("guard exploded")
	}
	if res := run(`{"text":"x"}`, false, boom); res.ReasonCode() != tool.ReasonPanic {
		t.Errorf("panicking guard = %+v, want PANIC", res)
	}
}

type guardKey struct{}

// BenchmarkValidateArgs measures argument validation against a cached
// compiled schema: a valid call and one that fails two keywords.
func BenchmarkValidateArgs(b *testing.B) {
	t := echo()
	for _, bc := range []struct{ name, args string }{
		{"valid", `{"text":"hello","n":3}`},
		{"invalid", `{"text":"","n":-1,"extra":true}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			args := json.RawMessage(bc.args)
			b.ReportAllocs()
			for b.Loop() {
				_ = tool.ValidateArgs(t, args)
			}
		})
	}
}

// TestValidateArgsDoesNotEchoValues: the error text (which reaches the model
// and the logs) names where the arguments fail, never what they hold.
func TestValidateArgsDoesNotEchoValues(t *testing.T) {
	const secret = "SECRET-VALUE-1234"
	for _, args := range []string{
		`{"text":"a","n":"` + secret + `"}`,
		`{"text":["` + secret + `"]}`,
		`{"text":"a","n":-1` + `,"x":"` + secret + `"}`,
	} {
		err := tool.ValidateArgs(echo(), json.RawMessage(args))
		if err == nil {
			t.Fatalf("ValidateArgs(%s) = nil, want an error", args)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("ValidateArgs(%s) = %q, echoes the argument value", args, err)
		}
	}
}

func TestStoredAuthorityCopiesTheSpeaker(t *testing.T) {
	sp, err := authz.NewOwner("owner/install/0123456789abcdef", true, authz.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	a := sp.Authority()
	got := tool.StoredAuthority(sp)
	want := sessions.SourceAuthority{SpeakerKind: a.SpeakerKind, SpeakerID: a.SpeakerID, SpeakerDisplay: a.SpeakerDisplay,
		PrincipalID: a.PrincipalID, Tier: string(a.Tier), Interaction: a.Interaction, Source: authz.SourceCLI}
	if got != want {
		t.Errorf("StoredAuthority = %+v, want %+v", got, want)
	}
}
