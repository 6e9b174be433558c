package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	neturl "net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/openprogram/openprogram/sessions"
)

// The OTLP protocols exported (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolHTTP = "http/protobuf" // the default
	ProtocolGRPC = "grpc"
)

// DefaultServiceName is service.name when neither OTEL_SERVICE_NAME nor
// telemetry.service_name names another.
const DefaultServiceName = "openprogram"

// Bounds of the telemetry export: it never blocks a request, drops rather
// than grows when the collector is slow or down, and flushes with a bound
// at exit.
const (
	// telemetryQueue is the most finished spans waiting for export; more
	// are dropped.
	telemetryQueue = 2048
	// telemetryExportTimeout bounds one export request.
	telemetryExportTimeout = 5 * time.Second
	// TelemetryFlushTimeout bounds the flush at exit ([Telemetry.Shutdown]).
	TelemetryFlushTimeout = 3 * time.Second
)

// TelemetryConfig configures OpenTelemetry export (config telemetry.*).
// The standard OTEL_* variables win over it.
type TelemetryConfig struct {
	// Endpoint is telemetry.endpoint: the OTLP base URL
	// (OTEL_EXPORTER_OTLP_ENDPOINT's form: /v1/traces and /v1/metrics are
	// added). "" sends nothing unless the environment names an endpoint.
	Endpoint string
	// ServiceName is telemetry.service_name ("": [DefaultServiceName]).
	ServiceName string
	// CaptureContent is telemetry.capture_content: spans also carry the
	// prompt, the reply and tools' arguments and results, every secret of
	// the environment masked. OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
	// ("true" or "false") wins.
	CaptureContent bool
}

// TelemetryTarget is where telemetry goes, as the configuration and the
// environment decide it.
type TelemetryTarget struct {
	// On reports that telemetry is exported; Why says why not when off.
	On  bool
	Why string
	// Traces and Metrics are the URLs the signals go to.
	Traces, Metrics string
	// Protocol is the OTLP protocol: [ProtocolHTTP] or [ProtocolGRPC].
	Protocol string
	// Misconfigured: an endpoint is given but a setting makes it unusable
	// (Why says which); telemetry is off.
	Misconfigured bool
	// CaptureContent: the owner opted in to content in the spans.
	CaptureContent bool
	// probeHeaders are the headers of the signal [ProbeTelemetry] sends
	// to (OTEL_EXPORTER_OTLP_TRACES_HEADERS or _METRICS_HEADERS, else
	// OTEL_EXPORTER_OTLP_HEADERS), as the exporter sends them: a hosted
	// collector's API key. Unexported: never printed.
	probeHeaders map[string]string
}

// TelemetryTargetOf decides where telemetry goes: off unless an OTLP
// endpoint is given (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT,
// else telemetry.endpoint); OTEL_SDK_DISABLED=true always wins. The
// protocol is OTEL_EXPORTER_OTLP_PROTOCOL's: http/protobuf (the default;
// /v1/traces and /v1/metrics are added to the generic endpoint) or grpc
// (the endpoint as given); one protocol for both signals.
func TelemetryTargetOf(cfg TelemetryConfig, getenv func(string) string) TelemetryTarget {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return TelemetryTarget{Why: "OTEL_SDK_DISABLED=true"}
	}
	base := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	if base == "" {
		base = cfg.Endpoint
	}
	protocol := ProtocolHTTP
	if p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL")); p != "" {
		protocol = p
	}
	for _, env := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"} {
		if p := strings.TrimSpace(getenv(env)); p != "" && p != protocol {
			return TelemetryTarget{Misconfigured: true, Why: fmt.Sprintf("%s=%q differs from the protocol of the other signal (%q): use one protocol for both", env, p, protocol)}
		}
	}
	if protocol != ProtocolHTTP && protocol != ProtocolGRPC {
		return TelemetryTarget{Misconfigured: true, Why: fmt.Sprintf("OTEL_EXPORTER_OTLP_PROTOCOL=%q is not supported: use http/protobuf (a collector's port 4318) or grpc (4317)", protocol)}
	}
	signal := func(env, path string) string {
		if v := strings.TrimSpace(getenv(env)); v != "" {
			return v
		}
		if base == "" {
			return ""
		}
		if protocol == ProtocolGRPC {
			return base // OTLP/gRPC: one endpoint, no signal path
		}
		return strings.TrimSuffix(base, "/") + path
	}
	t := TelemetryTarget{
		Traces:   signal("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces"),
		Metrics:  signal("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "/v1/metrics"),
		Protocol: protocol,
	}
	if t.Traces == "" && t.Metrics == "" {
		return TelemetryTarget{Why: "no OTLP endpoint: set OTEL_EXPORTER_OTLP_ENDPOINT or telemetry.endpoint"}
	}
	t.On = true
	t.CaptureContent = cfg.CaptureContent
	headers := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_HEADERS"))
	signalHeaders := "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	if t.Traces == "" {
		signalHeaders = "OTEL_EXPORTER_OTLP_METRICS_HEADERS"
	}
	if h := strings.TrimSpace(getenv(signalHeaders)); h != "" {
		headers = h
	}
	t.probeHeaders = parseOTLPHeaders(headers)
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"))) {
	case "true":
		t.CaptureContent = true
	case "false":
		t.CaptureContent = false
	}
	return t
}

// parseOTLPHeaders reads an OTLP headers variable as the exporter does:
// comma-separated key=value, both percent-decoded; a malformed pair is
// skipped.
func parseOTLPHeaders(list string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(list, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		k, kerr := neturl.PathUnescape(strings.TrimSpace(k))
		v, verr := neturl.PathUnescape(strings.TrimSpace(v))
		if kerr != nil || verr != nil || k == "" {
			continue
		}
		out[k] = v
	}
	return out
}

// Telemetry is this process's OpenTelemetry export: the global tracer and
// meter providers, set by [StartTelemetry]. Its nil value exports nothing.
type Telemetry struct {
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	target TelemetryTarget
}

// StartTelemetry sets the global tracer and meter providers (and the W3C
// trace context propagator) when [TelemetryTargetOf] says telemetry is on,
// and returns nil with nothing set otherwise: the instrumentation then
// costs a no-op call. Spans leave through a batch processor whose queue
// drops when full, metrics through a periodic reader
// (OTEL_METRIC_EXPORT_INTERVAL, default 60 s); every export is bounded by
// a timeout, and export failures are logged at most once a minute. The
// resource is service.name (OTEL_SERVICE_NAME, telemetry.service_name or
// "openprogram"), service.version and OTEL_RESOURCE_ATTRIBUTES; the
// sampler is OTEL_TRACES_SAMPLER's (default parentbased_always_on).
func StartTelemetry(ctx context.Context, cfg TelemetryConfig, getenv func(string) string, version string, log *slog.Logger) (*Telemetry, error) {
	target := TelemetryTargetOf(cfg, getenv)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !target.On {
		if target.Misconfigured {
			log.Warn("telemetry off", "why", target.Why)
		}
		return nil, nil
	}
	name := cfg.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	if version == "" {
		version = "(devel)"
	}
	// Later detectors win: OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
	// over the configuration.
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(name), semconv.ServiceVersion(version)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("telemetry: build the resource (check OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	otel.SetErrorHandler(&throttledErrors{log: log})
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	t := &Telemetry{target: target}
	if target.Traces != "" {
		exp, err := newSpanExporter(ctx, target)
		if err != nil {
			return nil, fmt.Errorf("telemetry: the trace exporter for %s: %w", sessions.RedactURL(target.Traces), err)
		}
		t.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp,
			sdktrace.WithMaxQueueSize(telemetryQueue), sdktrace.WithMaxExportBatchSize(512), sdktrace.WithExportTimeout(telemetryExportTimeout)))
		otel.SetTracerProvider(t.tp)
	}
	if target.Metrics != "" {
		exp, err := newMetricExporter(ctx, target)
		if err != nil {
			return nil, fmt.Errorf("telemetry: the metric exporter for %s: %w", sessions.RedactURL(target.Metrics), err)
		}
		t.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)))
		otel.SetMeterProvider(t.mp)
	}
	log.Info("telemetry on", "traces", sessions.RedactURL(target.Traces), "metrics", sessions.RedactURL(target.Metrics), "service_name", name)
	return t, nil
}

// exportRetry bounds the retries of one export: the batch is dropped
// after it.
var exportRetry = struct{ initial, max, elapsed time.Duration }{time.Second, 5 * time.Second, 10 * time.Second}

// newSpanExporter is the OTLP span exporter of target's protocol.
func newSpanExporter(ctx context.Context, target TelemetryTarget) (sdktrace.SpanExporter, error) {
	if target.Protocol == ProtocolGRPC {
		return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(target.Traces), otlptracegrpc.WithTimeout(telemetryExportTimeout),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: true, InitialInterval: exportRetry.initial, MaxInterval: exportRetry.max, MaxElapsedTime: exportRetry.elapsed}))
	}
	return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(target.Traces), otlptracehttp.WithTimeout(telemetryExportTimeout),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: exportRetry.initial, MaxInterval: exportRetry.max, MaxElapsedTime: exportRetry.elapsed}))
}

// newMetricExporter is the OTLP metric exporter of target's protocol.
func newMetricExporter(ctx context.Context, target TelemetryTarget) (sdkmetric.Exporter, error) {
	if target.Protocol == ProtocolGRPC {
		return otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpointURL(target.Metrics), otlpmetricgrpc.WithTimeout(telemetryExportTimeout),
			otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: true, InitialInterval: exportRetry.initial, MaxInterval: exportRetry.max, MaxElapsedTime: exportRetry.elapsed}))
	}
	return otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(target.Metrics), otlpmetrichttp.WithTimeout(telemetryExportTimeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: exportRetry.initial, MaxInterval: exportRetry.max, MaxElapsedTime: exportRetry.elapsed}))
}

// Target is where t sends telemetry.
func (t *Telemetry) Target() TelemetryTarget {
	if t == nil {
		return TelemetryTarget{}
	}
	return t.target
}

// Shutdown flushes what is queued and stops the export, within
// [TelemetryFlushTimeout] whatever ctx allows: what cannot be sent by then
// is dropped. Nil does nothing.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), TelemetryFlushTimeout)
	defer cancel()
	errs := make(chan error, 2)
	go func() {
		if t.tp == nil {
			errs <- nil
			return
		}
		errs <- t.tp.Shutdown(ctx)
	}()
	go func() {
		if t.mp == nil {
			errs <- nil
			return
		}
		errs <- t.mp.Shutdown(ctx)
	}()
	return errors.Join(<-errs, <-errs)
}

// throttledErrors logs the SDK's export errors at most once a minute: a
// collector that is down must not flood the log.
type throttledErrors struct {
	log  *slog.Logger
	last atomic.Int64
}

func (h *throttledErrors) Handle(err error) {
	now := time.Now().UnixNano()
	last := h.last.Load()
	if now-last < int64(time.Minute) || !h.last.CompareAndSwap(last, now) {
		return
	}
	h.log.Warn("telemetry export failed (telemetry is dropped while the collector is unreachable; repeats are not logged for a minute)", "error", err)
}

// ProbeTelemetry sends an empty OTLP trace export (HTTP or gRPC, as
// target says, with the exporter's headers) to target.Traces (or an HTTP
// one to Metrics) and reports
// whether the collector accepted it, within timeout: doctor's "does it
// arrive".
func ProbeTelemetry(ctx context.Context, target TelemetryTarget, timeout time.Duration) error {
	if !target.On {
		return errors.New(target.Why)
	}
	url := target.Traces
	if url == "" {
		url = target.Metrics
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if target.Protocol == ProtocolGRPC {
		for k, v := range target.probeHeaders {
			ctx = metadata.AppendToOutgoingContext(ctx, strings.ToLower(k), v)
		}
		return probeGRPC(ctx, url)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(""))
	if err != nil {
		return fmt.Errorf("build the probe for %s: %w", sessions.RedactURL(url), err)
	}
	for k, v := range target.probeHeaders {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		// net/http's error repeats the URL; ours names it, redacted.
		var uerr *neturl.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("post to %s: %w", sessions.RedactURL(url), err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s answered %s", sessions.RedactURL(url), resp.Status)
	}
	return nil
}

// probeGRPC sends an empty OTLP/gRPC trace export to endpoint (http://
// without TLS, https:// or a bare host:port with it).
func probeGRPC(ctx context.Context, endpoint string) error {
	creds := credentials.NewTLS(nil)
	target := endpoint
	if u, err := neturl.Parse(endpoint); err == nil && u.Host != "" {
		target = u.Host
		if u.Scheme == "http" {
			creds = insecure.NewCredentials()
		}
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", sessions.RedactURL(endpoint), err)
	}
	defer conn.Close()
	if _, err := coltracepb.NewTraceServiceClient(conn).Export(ctx, &coltracepb.ExportTraceServiceRequest{}); err != nil {
		return fmt.Errorf("export to %s: %w", sessions.RedactURL(endpoint), err)
	}
	return nil
}
