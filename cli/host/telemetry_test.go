package host_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/host"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// Telemetry is off unless an endpoint is given; OTEL_SDK_DISABLED=true
// wins; the per-signal variables win over the generic one, which wins
// over telemetry.endpoint; grpc takes the endpoint as it is; another
// protocol, or two, turn it off with the reason.
func TestTelemetryTarget(t *testing.T) {
	cfg := host.TelemetryConfig{Endpoint: "http://config:4318"}
	for _, tc := range []struct {
		name            string
		cfg             host.TelemetryConfig
		env             func(string) string
		on              bool
		traces, metrics string
		why             string
	}{
		{name: "nothing", env: envOf(), why: "no OTLP endpoint"},
		{name: "config", cfg: cfg, env: envOf(), on: true, traces: "http://config:4318/v1/traces", metrics: "http://config:4318/v1/metrics"},
		{name: "env over config", cfg: cfg, env: envOf("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318/"), on: true,
			traces: "http://env:4318/v1/traces", metrics: "http://env:4318/v1/metrics"},
		{name: "per signal", cfg: cfg, env: envOf("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://t/x"), on: true,
			traces: "http://t/x", metrics: "http://config:4318/v1/metrics"},
		{name: "disabled wins", cfg: cfg, env: envOf("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318", "OTEL_SDK_DISABLED", "TRUE"), why: "OTEL_SDK_DISABLED"},
		{name: "grpc", cfg: cfg, env: envOf("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4317"), on: true,
			traces: "http://env:4317", metrics: "http://env:4317"},
		{name: "http/json", cfg: cfg, env: envOf("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"), why: "not supported"},
		{name: "mixed", cfg: cfg, env: envOf("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"), why: "one protocol"},
		{name: "http/protobuf", cfg: cfg, env: envOf("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"), on: true,
			traces: "http://config:4318/v1/traces", metrics: "http://config:4318/v1/metrics"},
	} {
		got := host.TelemetryTargetOf(tc.cfg, tc.env)
		if got.On != tc.on || got.Traces != tc.traces || got.Metrics != tc.metrics || !strings.Contains(got.Why, tc.why) {
			t.Errorf("%s: target = %+v, want on %v traces %q metrics %q why ~%q", tc.name, got, tc.on, tc.traces, tc.metrics, tc.why)
		}
	}
}

// Off, StartTelemetry sets nothing and returns nil; Shutdown of nil is a
// no-op.
func TestStartTelemetryOff(t *testing.T) {
	tel, err := host.StartTelemetry(context.Background(), host.TelemetryConfig{}, envOf(), "v", nil)
	if err != nil || tel != nil {
		t.Fatalf("StartTelemetry off = %v, %v; want nil, nil", tel, err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown of nil = %v", err)
	}
}

// The flush at exit does not hang when the collector accepts the
// connection and never answers.
func TestTelemetryShutdownBounded(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // a blackhole: accepts, reads, never answers
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				b := make([]byte, 4096)
				for {
					if _, err := c.Read(b); err != nil {
						return
					}
				}
			}()
		}
	}()
	tel, err := host.StartTelemetry(context.Background(), host.TelemetryConfig{Endpoint: "http://" + l.Addr().String()}, envOf(), "v", nil)
	if err != nil || tel == nil {
		t.Fatalf("StartTelemetry = %v, %v", tel, err)
	}
	// Shutdown gives up after TelemetryFlushTimeout; a minute only tells a
	// hang from a slow machine.
	done := make(chan struct{})
	go func() {
		_ = tel.Shutdown(context.Background())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("Shutdown hangs on a collector that never answers (its bound is %s)", host.TelemetryFlushTimeout)
	}
}

// The probe reports a collector that accepts an export, and one that is
// not there.
func TestProbeTelemetry(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	target := host.TelemetryTargetOf(host.TelemetryConfig{Endpoint: srv.URL}, envOf())
	if err := host.ProbeTelemetry(context.Background(), target, 5*time.Second); err != nil {
		t.Errorf("probe of a collector = %v", err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + l.Addr().String()
	l.Close()
	target = host.TelemetryTargetOf(host.TelemetryConfig{Endpoint: "http://user:pw@" + strings.TrimPrefix(closed, "http://")}, envOf())
	err := host.ProbeTelemetry(context.Background(), target, 5*time.Second)
	if err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("probe of a closed port = %v, want an error without the password", err)
	}
}

// The probe sends the exporter's headers (OTEL_EXPORTER_OTLP_HEADERS, the
// per-signal form winning), as the export does: a hosted collector that
// wants an API key accepts it.
func TestProbeTelemetrySendsHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "key one" || r.Header.Get("X-Team") != "t" {
			http.Error(w, "no key", http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	for _, env := range []func(string) string{
		envOf("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=key%20one, x-team=t"),
		envOf("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=wrong", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-api-key=key%20one,x-team=t"),
	} {
		target := host.TelemetryTargetOf(host.TelemetryConfig{Endpoint: srv.URL}, env)
		if err := host.ProbeTelemetry(context.Background(), target, 5*time.Second); err != nil {
			t.Errorf("probe of a collector that wants a key = %v", err)
		}
	}
}
