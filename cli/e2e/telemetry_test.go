//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
)

// sink is the OpenTelemetry Collector's OTLP receiver (cli/e2e/otlpsink,
// its own module) running as a process: every batch it receives, as OTLP
// JSON.
type sink struct {
	Addr     string // OTLP/HTTP
	GRPCAddr string // OTLP/gRPC
	mu       sync.Mutex
	raw      bytes.Buffer
	// traces and metrics are the batches received so far.
	traces, metrics []json.RawMessage
}

// startSink builds and starts the OTLP receiver on a free loopback port.
func startSink(t *testing.T) *sink {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "otlpsink")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = "otlpsink"
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the OTLP receiver: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the OTLP receiver: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	s := &sink{}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	if !sc.Scan() {
		t.Fatalf("the OTLP receiver said nothing: %v", sc.Err())
	}
	addrs, ok := strings.CutPrefix(sc.Text(), "listening ")
	if f := strings.Fields(addrs); !ok || len(f) != 2 {
		t.Fatalf("the OTLP receiver's first line = %q", sc.Text())
	} else {
		s.Addr, s.GRPCAddr = f[0], f[1]
	}
	go func() {
		for sc.Scan() {
			signal, body, _ := strings.Cut(sc.Text(), " ")
			s.mu.Lock()
			s.raw.WriteString(sc.Text() + "\n")
			switch signal {
			case "traces":
				s.traces = append(s.traces, json.RawMessage(body))
			case "metrics":
				s.metrics = append(s.metrics, json.RawMessage(body))
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// otlpSpan is what the tests read of a span in OTLP JSON.
type otlpSpan struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Kind         int    `json:"kind"`
	Attributes   []struct {
		Key   string `json:"key"`
		Value struct {
			String *string   `json:"stringValue"`
			Int    *string   `json:"intValue"`
			Array  *struct{} `json:"arrayValue"`
		} `json:"value"`
	} `json:"attributes"`
	Events []struct {
		Name string `json:"name"`
	} `json:"events"`
}

// attr is the span's attribute key as text ("" when absent).
func (s otlpSpan) attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key != key {
			continue
		}
		switch {
		case a.Value.String != nil:
			return *a.Value.String
		case a.Value.Int != nil:
			return *a.Value.Int
		case a.Value.Array != nil:
			return "[array]"
		}
	}
	return ""
}

// spans returns every span received so far.
func (s *sink) spans(t *testing.T) []otlpSpan {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []otlpSpan
	for _, b := range s.traces {
		var td struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []otlpSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(b, &td); err != nil {
			t.Fatalf("OTLP traces %s: %v", b, err)
		}
		for _, rs := range td.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// metricNames returns the names of every metric received so far.
func (s *sink) metricNames(t *testing.T) map[string]bool {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	names := map[string]bool{}
	for _, b := range s.metrics {
		var md struct {
			ResourceMetrics []struct {
				ScopeMetrics []struct {
					Metrics []struct {
						Name string `json:"name"`
					} `json:"metrics"`
				} `json:"scopeMetrics"`
			} `json:"resourceMetrics"`
		}
		if err := json.Unmarshal(b, &md); err != nil {
			t.Fatalf("OTLP metrics %s: %v", b, err)
		}
		for _, rm := range md.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					names[m.Name] = true
				}
			}
		}
	}
	return names
}

func (s *sink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw.String()
}

// The client's trace context in _meta is the parent of the request's
// server span, under which the turn, each model call and each tool run
// are; metrics arrive; the audit records carry the trace id; no prompt
// text leaves.
func TestTelemetryTraceOfPromptSend(t *testing.T) {
	const (
		traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
		parentID = "00f067aa0ba902b7"
		secret   = "telemetry-never-sees-this-prompt"
	)
	s := startSink(t)
	in := e2etest.NewInstall(t, "sqlite")
	in.Script(
		scripted.Turn{Text: "looking", ToolCalls: []scripted.ToolCall{e2etest.ToolCall("memory_search", map[string]any{"query": "q"})},
			Usage: &provider.Usage{InputTokens: 11, OutputTokens: 3}},
		scripted.Turn{Text: "done", Usage: &provider.Usage{InputTokens: 17, OutputTokens: 5}},
	)
	in.MustRun("config", "set", "model.name", "script-model")
	c := in.Serve(&e2etest.ConnOptions{ClientName: "otel-e2e", ClientVersion: "1", ProtocolVersion: "2025-11-25",
		Env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + s.Addr, "OTEL_BSP_SCHEDULE_DELAY=100"}})
	ctx, cancel := context.WithTimeout(context.Background(), e2etest.TestTimeout)
	defer cancel()
	res, err := c.Session.CallTool(ctx, &mcp.CallToolParams{Name: "prompt_send", Arguments: map[string]any{"prompt": secret},
		Meta: mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("prompt_send = %+v, %v", res, err)
	}
	c.Close() // the server flushes at exit

	var spans []otlpSpan
	e2etest.Eventually(t, "the request, turn, model and tool spans", time.Minute, func() bool {
		spans = spans[:0]
		for _, sp := range s.spans(t) {
			if sp.TraceID == traceID {
				spans = append(spans, sp)
			}
		}
		return len(spans) >= 5
	})
	byName := map[string][]otlpSpan{}
	for _, sp := range spans {
		byName[sp.Name] = append(byName[sp.Name], sp)
	}
	one := func(name string) otlpSpan {
		t.Helper()
		if len(byName[name]) != 1 {
			var names []string
			for _, sp := range spans {
				names = append(names, sp.Name)
			}
			t.Fatalf("spans named %q: %d, want 1 (trace holds %q)", name, len(byName[name]), names)
		}
		return byName[name][0]
	}
	req := one("tools/call prompt_send")
	if req.ParentSpanID != parentID || req.Kind != 2 {
		t.Errorf("request span parent %q kind %d, want the _meta parent %q and SERVER (2)", req.ParentSpanID, req.Kind, parentID)
	}
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "prompt_send", "network.transport": "pipe",
		"mcp.protocol.version": "2025-11-25", "jsonrpc.request.id": "*"} {
		if got := req.attr(k); got == "" || (want != "*" && got != want) {
			t.Errorf("request span %s = %q, want %q", k, got, want)
		}
	}
	turn := one("invoke_agent openprogram")
	if turn.ParentSpanID != req.SpanID {
		t.Errorf("turn span's parent = %q, want the request span %q", turn.ParentSpanID, req.SpanID)
	}
	chats := byName["chat script-model"]
	if len(chats) != 2 {
		t.Fatalf("model call spans = %d, want 2", len(chats))
	}
	tokens := map[string]bool{}
	for _, ch := range chats {
		if ch.ParentSpanID != turn.SpanID || ch.attr("gen_ai.operation.name") != "chat" || ch.attr("gen_ai.provider.name") != "scripted" || ch.attr("gen_ai.request.model") != "script-model" {
			t.Errorf("model call span %+v: want a chat under the turn with its provider", ch)
		}
		tokens[ch.attr("gen_ai.usage.input_tokens")+"/"+ch.attr("gen_ai.usage.output_tokens")] = true
	}
	if !tokens["11/3"] || !tokens["17/5"] {
		t.Errorf("model call token counts = %v, want 11/3 and 17/5 (the script's)", tokens)
	}
	tool := one("execute_tool memory_search")
	if tool.ParentSpanID != turn.SpanID || tool.attr("gen_ai.tool.name") != "memory_search" || tool.attr("gen_ai.tool.call.id") == "" {
		t.Errorf("tool span %+v: want execute_tool under the turn with its name and call id", tool)
	}
	if len(tool.Events) != 1 || tool.Events[0].Name != "gate.decision" {
		t.Errorf("tool span events = %+v, want the gate's decision", tool.Events)
	}
	if len(byName["acquire turn lease"]) != 1 || len(byName["store reply"]) != 1 {
		t.Errorf("lease and store spans: %d, %d; want one each", len(byName["acquire turn lease"]), len(byName["store reply"]))
	}
	audited := false
	for _, sp := range byName["audit append"] {
		audited = audited || (sp.ParentSpanID == req.SpanID && sp.attr("openprogram.audit.type") == "mcp.prompt.requested")
	}
	if !audited {
		t.Errorf("no audit append span of the request record under the request span")
	}
	if strings.Contains(s.text(), secret) {
		t.Errorf("the prompt's text reached the collector")
	}

	e2etest.Eventually(t, "the metrics", 20*time.Second, func() bool {
		n := s.metricNames(t)
		return n["mcp.server.operation.duration"] && n["mcp.server.session.duration"] && n["gen_ai.client.operation.duration"] &&
			n["gen_ai.client.token.usage"] && n["openprogram.audit.append.duration"]
	})

	recs := e2etest.AuditOf(in.Audit(), "mcp.prompt.requested")
	if len(recs) != 1 || recs[0].PayloadMap(t)["trace_id"] != traceID {
		t.Errorf("prompt request records = %+v, want one carrying trace_id %s", recs, traceID)
	}
	in.VerifyAudit()
}

// A task's runner continues the creating request's trace: its run and its
// turn are spans of the trace the client's _meta named.
func TestTelemetryTaskRunnerJoinsTrace(t *testing.T) {
	const (
		traceID  = "0af7651916cd43dd8448eb211c80319c"
		parentID = "b7ad6b7169203331"
	)
	s := startSink(t)
	in := e2etest.NewInstall(t, "sqlite")
	in.Script(e2etest.Say("done"))
	c := in.Start(e2etest.EnvToken+"="+in.Token, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+s.Addr, "OTEL_BSP_SCHEDULE_DELAY=100")
	sc := bufio.NewScanner(c.Stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := 0
	call := func(method string, params map[string]any) e2etest.Frame {
		t.Helper()
		n++
		id := strconv.Itoa(n)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": n, "method": method, "params": params})
		if _, err := c.Stdin.Write(append(b, '\n')); err != nil {
			t.Fatalf("write %s: %v", method, err)
		}
		for sc.Scan() {
			f, err := e2etest.ParseFrame(sc.Bytes())
			if err != nil {
				t.Fatalf("stdout line %q: %v", sc.Bytes(), err)
			}
			if f.IsResponse() && f.ID() == id {
				return f
			}
		}
		t.Fatalf("stdout ended before the answer to %s: %v\nstderr:\n%s", method, sc.Err(), c.Stderr)
		return e2etest.Frame{}
	}
	call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "otel-e2e", "version": "1"}})
	if _, err := c.Stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	created := call("tools/call", map[string]any{"name": "prompt_send", "arguments": map[string]any{"prompt": "as a task"}, "task": map[string]any{},
		"_meta": map[string]any{"traceparent": "00-" + traceID + "-" + parentID + "-01"}})
	var res struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if err := json.Unmarshal(created.Members["result"], &res); err != nil || res.Task.TaskID == "" {
		t.Fatalf("task-augmented prompt_send answered %s", created.Members)
	}
	e2etest.Eventually(t, "the task to complete", time.Minute, func() bool {
		var got struct {
			Status string `json:"status"`
		}
		f := call("tasks/get", map[string]any{"taskId": res.Task.TaskID})
		return json.Unmarshal(f.Members["result"], &got) == nil && got.Status == "completed"
	})
	c.Close()

	var req, run, turn otlpSpan
	e2etest.Eventually(t, "the request's and the runner's spans", time.Minute, func() bool {
		for _, sp := range s.spans(t) {
			if sp.TraceID != traceID {
				continue
			}
			switch sp.Name {
			case "tools/call prompt_send":
				req = sp
			case "run_task prompt_send":
				run = sp
			case "invoke_agent openprogram":
				turn = sp
			}
		}
		return req.SpanID != "" && run.SpanID != "" && turn.SpanID != ""
	})
	if req.ParentSpanID != parentID || run.ParentSpanID != req.SpanID || turn.ParentSpanID != run.SpanID {
		t.Errorf("parents: request %q (want %q), runner %q (want the request %q), turn %q (want the runner %q)",
			req.ParentSpanID, parentID, run.ParentSpanID, req.SpanID, turn.ParentSpanID, run.SpanID)
	}
}

// With the owner's opt-in (OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)
// the prompt and the tool's arguments are sent, with every secret the
// process holds masked: the MCP token and an API key named in the prompt
// never leave.
func TestTelemetryCaptureContentMasksSecrets(t *testing.T) {
	const apiKey = "sk-telemetry-0123456789"
	s := startSink(t)
	in := e2etest.NewInstall(t, "sqlite")
	in.Script(
		scripted.Turn{ToolCalls: []scripted.ToolCall{e2etest.ToolCall("memory_search", map[string]any{"query": "find " + apiKey})}},
		e2etest.Say("done"),
	)
	c := in.Serve(&e2etest.ConnOptions{ClientName: "otel-e2e", ClientVersion: "1", ProtocolVersion: "2025-11-25",
		Env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + s.Addr, "OTEL_BSP_SCHEDULE_DELAY=100",
			"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true", "SOME_API_KEY=" + apiKey}})
	ctx, cancel := context.WithTimeout(context.Background(), e2etest.TestTimeout)
	defer cancel()
	prompt := "look up the-visible-words with " + apiKey + " and " + in.Token
	if res, err := c.Session.CallTool(ctx, &mcp.CallToolParams{Name: "prompt_send", Arguments: map[string]any{"prompt": prompt}}); err != nil || res.IsError {
		t.Fatalf("prompt_send = %+v, %v", res, err)
	}
	c.Close()
	var turn, tool otlpSpan
	e2etest.Eventually(t, "the turn and tool spans", time.Minute, func() bool {
		for _, sp := range s.spans(t) {
			switch sp.Name {
			case "invoke_agent openprogram":
				turn = sp
			case "execute_tool memory_search":
				tool = sp
			}
		}
		return turn.SpanID != "" && tool.SpanID != ""
	})
	if in := turn.attr("gen_ai.input.messages"); !strings.Contains(in, "the-visible-words") || !strings.Contains(in, "[REDACTED]") {
		t.Errorf("turn gen_ai.input.messages = %q, want the prompt with its secrets masked", in)
	}
	if args := tool.attr("gen_ai.tool.call.arguments"); !strings.Contains(args, "find [REDACTED]") {
		t.Errorf("tool gen_ai.tool.call.arguments = %q, want the arguments with the key masked", args)
	}
	if raw := s.text(); strings.Contains(raw, apiKey) || strings.Contains(raw, in.Token) {
		t.Errorf("a secret reached the collector")
	}
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends the same telemetry over OTLP/gRPC.
func TestTelemetryOverGRPC(t *testing.T) {
	s := startSink(t)
	in := e2etest.NewInstall(t, "sqlite")
	in.Script(e2etest.Say("done"))
	c := in.Serve(&e2etest.ConnOptions{ClientName: "otel-e2e", ClientVersion: "1", ProtocolVersion: "2025-11-25",
		Env: []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + s.GRPCAddr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_BSP_SCHEDULE_DELAY=100"}})
	ctx, cancel := context.WithTimeout(context.Background(), e2etest.TestTimeout)
	defer cancel()
	if res, err := c.Session.CallTool(ctx, &mcp.CallToolParams{Name: "prompt_send", Arguments: map[string]any{"prompt": "over grpc"}}); err != nil || res.IsError {
		t.Fatalf("prompt_send = %+v, %v", res, err)
	}
	c.Close()
	e2etest.Eventually(t, "the turn's span and the metrics over gRPC", 20*time.Second, func() bool {
		turn := false
		for _, sp := range s.spans(t) {
			turn = turn || sp.Name == "invoke_agent openprogram"
		}
		return turn && s.metricNames(t)["mcp.server.operation.duration"]
	})
	r := in.RunWith(e2etest.BinPath, in.Env("OTEL_EXPORTER_OTLP_ENDPOINT=http://"+s.GRPCAddr, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"), nil, "doctor")
	if !strings.Contains(r.Stdout, "the collector accepted a test export") {
		t.Errorf("doctor over gRPC:\n%s", r.Stdout)
	}
}
