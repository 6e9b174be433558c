package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/tool"
	"testing"

	"github.com/openprogram/openprogram/runtime/secretenv"
)

// A captured text longer than captureLimit is masked before it is clipped:
// a secret the clip would cut in two is not left half in the span.
func TestCapturedMasksBeforeItClips(t *testing.T) {
	const secret = "sk-live-0123456789abcdefghijklmnopqrstuvwxyz"
	redact, err := secretenv.New().Redactor([]string{"MODEL_API_KEY=" + secret})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("x", captureLimit-12) + secret + " and more"
	got := captured(redact, text)
	if strings.Contains(got, secret[:12]) {
		t.Errorf("captured text ends %q: the start of the secret is left in it", got[len(got)-40:])
	}
	if len(got) > captureLimit+len("...") {
		t.Errorf("captured text is %d bytes, want at most %d", len(got), captureLimit+len("..."))
	}
}

// A secret a model writes into a tool's arguments with JSON escapes is
// masked too: the arguments are masked as their decoded text reads.
func TestCaptureToolArgumentsMasksEscapedSecret(t *testing.T) {
	const secret = "sk-live-0123456789abcdef"
	redact, err := secretenv.New().Redactor([]string{"MODEL_API_KEY=" + secret})
	if err != nil {
		t.Fatal(err)
	}
	args := []byte(`{"command":"echo \u0073k-live-0123456789abcdef","n":12345678901234567890}`)
	got := capturedArguments(redact, args)
	var v struct{ Command string }
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatalf("captured arguments %q are not JSON: %v", got, err)
	}
	if strings.Contains(v.Command, secret) {
		t.Errorf("captured arguments %q hold the secret", got)
	}
	if !strings.Contains(got, "12345678901234567890") {
		t.Errorf("captured arguments %q lost a number's digits", got)
	}
}

// recordingProvider records the names and attributes of the spans started
// through it.
type recordingProvider struct {
	noop.TracerProvider
	mu    sync.Mutex
	spans []*recordingSpan
}

func (p *recordingProvider) Tracer(string, ...trace.TracerOption) trace.Tracer {
	return recordingTracer{p: p}
}

type recordingTracer struct {
	noop.Tracer
	p *recordingProvider
}

func (t recordingTracer) Start(ctx context.Context, name string, _ ...trace.SpanStartOption) (context.Context, trace.Span) {
	s := &recordingSpan{name: name}
	t.p.mu.Lock()
	t.p.spans = append(t.p.spans, s)
	t.p.mu.Unlock()
	return trace.ContextWithSpan(ctx, s), s
}

type recordingSpan struct {
	noop.Span
	name  string
	attrs []attribute.KeyValue
}

func (s *recordingSpan) IsRecording() bool                      { return true }
func (s *recordingSpan) SetAttributes(kv ...attribute.KeyValue) { s.attrs = append(s.attrs, kv...) }

// A tool name the registry does not hold is the model's text: its span
// says "_OTHER", never the name, when content is not captured.
func TestToolSpanOfAnUnknownToolCarriesNoModelText(t *testing.T) {
	rec := &recordingProvider{}
	otel.SetTracerProvider(rec)
	r := &Runtime{opts: Options{}, exec: tool.NewExecutor(nil)}
	const leaked = "the-secret-the-model-read"
	r.RunTool(context.Background(), authz.Speaker{}, ToolCall{Name: leaked, ID: "call-1"})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.spans) == 0 {
		t.Fatal("no span was started")
	}
	for _, s := range rec.spans {
		if strings.Contains(s.name, leaked) {
			t.Errorf("span name %q holds the unknown tool's name", s.name)
		}
		for _, kv := range s.attrs {
			if strings.Contains(kv.Value.String(), leaked) {
				t.Errorf("span %q attribute %s = %q holds the unknown tool's name", s.name, kv.Key, kv.Value.String())
			}
		}
	}
}
