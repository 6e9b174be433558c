//go:build linux

package perf

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkTelemetry measures a tools/call (sessions_list) and a
// prompt_send (a turn of the scripted model: request, turn, model, lease,
// store and audit spans) with telemetry off and on, the collector
// answering, on a closed loopback port, and a blackhole that accepts and
// never answers. The last two must cost what "on" costs (the exporter
// never blocks a request, it drops), and the server's peak resident set
// (peak-RSS-MiB) must stay bounded however long the collector is away.
func BenchmarkTelemetry(b *testing.B) {
	bin := binary(b)
	collector := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	b.Cleanup(collector.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	hole, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { hole.Close() })
	go func() { // accepts, reads, never answers
		for {
			c, err := hole.Accept()
			if err != nil {
				return
			}
			go func() {
				buf := make([]byte, 64<<10)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	for _, coll := range []struct{ name, endpoint string }{
		{"off", ""}, {"on", collector.URL}, {"closed", closed}, {"blackhole", "http://" + hole.Addr().String()},
	} {
		var env []string
		if coll.endpoint != "" {
			// Spans leave every 100 ms, so the exporter is busy (or stuck)
			// while the requests run.
			env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + coll.endpoint, "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_METRIC_EXPORT_INTERVAL=1000"}
		}
		for _, op := range []string{"tools_call", "prompt_send"} {
			b.Run("collector="+coll.name+"/op="+op, func(b *testing.B) {
				st := newState(b, filepath.Join(b.TempDir(), "state"), tinyScript)
				p, _ := startRawEnv(b, bin, st, env)
				defer p.close(b)
				p.initialize(b)
				id := 100
				call := func() time.Duration {
					id++
					start := time.Now()
					if op == "prompt_send" {
						promptSend(b, p, id, "", "hello")
					} else {
						sessionsList(b, p, id)
					}
					return time.Since(start)
				}
				loopLatency(b, 20, call)
				status, err := procStatus(p.cmd.Process.Pid, "VmHWM")
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(status["VmHWM"])/1024, "peak-RSS-MiB")
			})
		}
	}
}

// sessionsList sends a sessions_list tools/call and waits for its answer.
func sessionsList(tb testing.TB, p *rawProc, id int) {
	tb.Helper()
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "sessions_list", "arguments": map[string]any{}}})
	if err != nil {
		tb.Fatal(err)
	}
	p.send(tb, append(line, '\n'))
	if m, _ := p.response(tb, strconv.Itoa(id)); m.Error != nil || len(m.Result) == 0 {
		tb.Fatalf("sessions_list %d: error %+v", id, m.Error)
	}
}
