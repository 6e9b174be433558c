package cli_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestDoctorTelemetry: doctor says where telemetry goes and whether the
// collector accepts a test export; off is not a problem, an unreachable
// collector or an unsupported protocol is a warning, never a failure.
func TestDoctorTelemetry(t *testing.T) {
	var exports atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			exports.Add(1)
		}
	}))
	defer collector.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()

	for _, tc := range []struct {
		name, status, infoHas string
		env                   []string
	}{
		{"off", "ok", "off: no OTLP endpoint", nil},
		{"disabled", "ok", "off: OTEL_SDK_DISABLED=true", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_SDK_DISABLED=true"}},
		{"arrives", "ok", "the collector accepted a test export", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL}},
		{"unreachable", "warn", closed + "/v1/traces", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + closed}},
		{"http/json", "warn", "not supported", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/json"}},
		{"grpc unreachable", "warn", "export to " + closed, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + closed, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"}},
	} {
		env, _, _ := healthy(t)
		r := runCLI(t, append(env, tc.env...), "doctor")
		c := findCheck(t, parseDoctor(t, r.stdout), "telemetry")
		if c.status != tc.status || !strings.Contains(c.info, tc.infoHas) {
			t.Errorf("%s: telemetry check = %+v, want %s and %q", tc.name, c, tc.status, tc.infoHas)
		}
		if r.code != 0 {
			t.Errorf("%s: doctor exit %d, want 0 (telemetry never fails the installation)\n%s", tc.name, r.code, r.stdout)
		}
	}
	if exports.Load() == 0 {
		t.Errorf("doctor sent no test export to the collector")
	}
}
