package cli

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"

	"go.opentelemetry.io/otel/trace"

	"github.com/openprogram/openprogram/internal/privatefile"
)

// ServeLogFileName is the log file `mcp serve --log-file` appends to, in
// the state directory.
const ServeLogFileName = "mcp-serve.log"

// serveLogger builds the logger of `mcp serve`: level and format as given,
// to stderr and, with toFile, also to <stateDir>/mcp-serve.log. The returned
// function closes the file.
func serveLogger(app *App, stateDir, level, format string, toFile bool) (*slog.Logger, func(), error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, nil, usagef("--log-level %q: use debug, info, warn or error", level)
	}
	var w io.Writer = app.Stderr
	closeFn := func() {}
	if toFile {
		f, err := privatefile.OpenAppend(filepath.Join(stateDir, ServeLogFileName))
		if err != nil {
			return nil, nil, err
		}
		w = io.MultiWriter(app.Stderr, f)
		closeFn = func() { f.Close() }
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(traceHandler{slog.NewJSONHandler(w, opts)}), closeFn, nil
	}
	return slog.New(traceHandler{slog.NewTextHandler(w, opts)}), closeFn, nil
}

// traceHandler adds trace_id and span_id to a record logged with a context
// that carries an OpenTelemetry span (log.InfoContext and the like), so an
// operator goes from a log line to its trace and its audit records.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}
