package cli

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// A record logged with a context that carries a span names its trace and
// span; one without names none.
func TestServeLogTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(traceHandler{slog.NewTextHandler(&buf, nil)}).With("client_id", "c1")
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	log.InfoContext(ctx, "with")
	log.Info("without")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7") || strings.Contains(lines[1], "trace_id") {
		t.Errorf("log lines:\n%s\nwant the first with the trace and span ids, the second without", buf.String())
	}
}
