// Package providertest runs fake model endpoints for tests: an
// [httptest.Server] that answers each request with the next canned [Reply],
// streamed event by event, and records what it was sent and whether the
// client hung up early. Builders produce replies in the OpenAI Chat
// Completions and Anthropic Messages streaming formats, so a test can drive
// the real providers without a network or a key.
//
//	srv := providertest.New(t, providertest.Reply{Body: providertest.OpenAIText("gpt-test", "Hello", " there")})
//	p, _ := openai.New(openai.Options{Model: "gpt-test", BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one canned answer.
type Reply struct {
	// Status is the HTTP status; 0 means 200.
	Status int
	// Header is added to the response. For a 200 reply Content-Type
	// defaults to text/event-stream.
	Header http.Header
	// Body is the response body. For a streaming reply it is split into
	// SSE events at blank lines, and each event is written and flushed on
	// its own.
	Body string
	// EventDelay is waited before each event after the first.
	EventDelay time.Duration
	// HoldAfter, when > 0, makes the server stop after writing that many
	// events and wait until the client hangs up (or the test ends); the rest
	// of Body is never sent. The hang-up is counted by [Server.Aborted].
	HoldAfter int
	// DropAfter, when > 0, makes the server close the connection abruptly
	// after that many events, as a broken network would.
	DropAfter int
	// Stall makes the server read the request and then send nothing, not
	// even the response headers, until the client hangs up (counted by
	// [Server.Aborted]) or the test ends.
	Stall bool
}

// Request is what the server received.
type Request struct {
	Method string
	Path   string
	Query  string // the raw query, without "?"
	Header http.Header
	Body   []byte
}

// JSON decodes the request body into v.
func (r Request) JSON(v any) error { return json.Unmarshal(r.Body, v) }

// Server is a fake model endpoint. URL is its root (no path).
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	replies  []Reply
	requests []Request
	aborted  int
	conns    int
	held     chan struct{} // receives when a request starts holding
	abortCh  chan struct{} // receives when a held request is aborted by the client
	done     chan struct{}
}

// New starts a Server answering with replies in order; once they run out it
// answers 500. The server is closed when the test ends.
func New(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	return NewAt(t, "127.0.0.1:0", replies...)
}

// NewAt is [New] listening on addr (host:port), such as an address of this
// machine that is not loopback ([NonLoopbackIP]).
func NewAt(t testing.TB, addr string, replies ...Reply) *Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("providertest: listen on %s: %v", addr, err)
	}
	s := &Server{
		replies: replies,
		held:    make(chan struct{}, 64),
		abortCh: make(chan struct{}, 64),
		done:    make(chan struct{}),
	}
	s.Server = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(s.serve), ConnState: s.countConn}}
	s.Start()
	t.Cleanup(func() {
		close(s.done)
		s.Client().CloseIdleConnections()
		s.Close()
	})
	return s
}

// Enqueue appends replies to answer later requests with.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replies = append(s.replies, replies...)
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Server) countConn(_ net.Conn, st http.ConnState) {
	if st == http.StateNew {
		s.mu.Lock()
		s.conns++
		s.mu.Unlock()
	}
}

// Connections returns how many connections the server accepted so far.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns
}

// NonLoopbackIP returns an IPv4 address of this machine that is neither
// loopback nor link-local, to listen on with [NewAt]; it skips the test
// when the machine has none.
func NonLoopbackIP(t testing.TB) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatalf("providertest: interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no IPv4 address besides loopback to listen on")
	return ""
}

// Aborted returns how many held requests the client hung up on.
func (s *Server) Aborted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aborted
}

// Held returns a channel that receives once each time a request reaches
// its HoldAfter point.
func (s *Server) Held() <-chan struct{} { return s.held }

// WaitAborted waits until a held request has been aborted by the client,
// and reports false if ctx ends first.
func (s *Server) WaitAborted(ctx context.Context) bool {
	select {
	case <-s.abortCh:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	var rep Reply
	ok := len(s.replies) > 0
	if ok {
		rep, s.replies = s.replies[0], s.replies[1:]
	}
	s.mu.Unlock()
	if !ok {
		http.Error(w, `{"error":{"message":"providertest: no reply left","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	if rep.Stall {
		s.hold(r.Context())
		return
	}
	for k, vs := range rep.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status != http.StatusOK {
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, rep.Body)
		return
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.WriteHeader(status)
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	flush()
	for i, ev := range Events(rep.Body) {
		if rep.HoldAfter > 0 && i == rep.HoldAfter {
			s.hold(r.Context())
			return
		}
		if rep.DropAfter > 0 && i == rep.DropAfter {
			drop(w)
			return
		}
		if i > 0 && rep.EventDelay > 0 {
			select {
			case <-time.After(rep.EventDelay):
			case <-r.Context().Done():
				s.countAbort()
				return
			case <-s.done:
				return
			}
		}
		if _, err := io.WriteString(w, ev); err != nil {
			return
		}
		flush()
	}
}

func (s *Server) hold(ctx context.Context) {
	select {
	case s.held <- struct{}{}:
	default:
	}
	select {
	case <-ctx.Done():
		s.countAbort()
	case <-s.done:
	}
}

func (s *Server) countAbort() {
	s.mu.Lock()
	s.aborted++
	s.mu.Unlock()
	select {
	case s.abortCh <- struct{}{}:
	default:
	}
}

func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("providertest: response writer cannot be hijacked")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	_ = buf.Flush()
	_ = conn.Close()
}

// RoutedClient returns a client that sends every request to this server,
// whatever host its URL names, so a test can use a base URL that is not
// literally loopback (http://gpu-box.lan:8000/v1) without any traffic
// leaving the machine.
func (s *Server) RoutedClient() *http.Client {
	addr := s.Listener.Addr().String()
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
	}}
}

// Events splits an SSE body into its events, each keeping its terminating
// blank line.
func Events(body string) []string {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	var out []string
	for ev := range strings.SplitAfterSeq(body, "\n\n") {
		// Blank events are dropped; an unterminated tail is kept as it is.
		if strings.TrimSpace(ev) != "" || ev != "" && !strings.HasSuffix(ev, "\n\n") {
			out = append(out, ev)
		}
	}
	return out
}

// Call is a tool call for the reply builders. Arguments is JSON text.
type Call struct {
	ID, Name, Arguments string
}

// OpenAIText returns a Chat Completions stream that says fragments, one
// chunk each, and finishes with "stop".
func OpenAIText(model string, fragments ...string) string {
	var b bytes.Buffer
	openAIChunk(&b, model, map[string]any{"role": "assistant", "content": ""}, nil)
	for _, f := range fragments {
		openAIChunk(&b, model, map[string]any{"content": f}, nil)
	}
	stop := "stop"
	openAIChunk(&b, model, map[string]any{}, &stop)
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// OpenAIToolCalls returns a Chat Completions stream that says text (if not
// empty) and then requests calls, each call's arguments split in two chunks
// as the OpenAI API does, finishing with "tool_calls".
func OpenAIToolCalls(model, text string, calls ...Call) string {
	var b bytes.Buffer
	openAIChunk(&b, model, map[string]any{"role": "assistant", "content": nil}, nil)
	if text != "" {
		openAIChunk(&b, model, map[string]any{"content": text}, nil)
	}
	for i, c := range calls {
		openAIChunk(&b, model, map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""},
		}}}, nil)
		half := len(c.Arguments) / 2
		for _, part := range []string{c.Arguments[:half], c.Arguments[half:]} {
			openAIChunk(&b, model, map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": part},
			}}}, nil)
		}
	}
	stop := "tool_calls"
	openAIChunk(&b, model, map[string]any{}, &stop)
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// OpenAIUsage returns body, a Chat Completions stream, with the usage chunk
// a server sends for stream_options.include_usage (no choices) inserted
// before its final "data: [DONE]".
func OpenAIUsage(body string, promptTokens, completionTokens int) string {
	data, err := json.Marshal(map[string]any{
		"id": "chatcmpl-providertest", "object": "chat.completion.chunk", "created": 1730000000,
		"model": "providertest", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": promptTokens, "completion_tokens": completionTokens, "total_tokens": promptTokens + completionTokens},
	})
	if err != nil {
		panic(err)
	}
	chunk := fmt.Sprintf("data: %s\n\n", data)
	if i := strings.LastIndex(body, "data: [DONE]"); i >= 0 {
		return body[:i] + chunk + body[i:]
	}
	return body + chunk
}

func openAIChunk(b *bytes.Buffer, model string, delta map[string]any, finish *string) {
	chunk := map[string]any{
		"id": "chatcmpl-providertest", "object": "chat.completion.chunk", "created": 1730000000,
		"model": model, "system_fingerprint": "fp_providertest",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
	}
	data, err := json.Marshal(chunk)
	if err != nil {
		panic(err)
	}
	fmt.Fprintf(b, "data: %s\n\n", data)
}

// AnthropicText returns a Messages stream that says fragments and ends the
// turn.
func AnthropicText(model string, fragments ...string) string {
	return AnthropicToolUse(model, strings.Join(fragments, "\x00"))
}

// AnthropicToolUse returns a Messages stream with a text block (if text is
// not empty; NUL bytes split it into deltas) followed by a tool_use block
// per call, ending with stop_reason "tool_use" (or "end_turn" without
// calls).
func AnthropicToolUse(model, text string, calls ...Call) string {
	var b bytes.Buffer
	event := func(name string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", name, data)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_providertest", "type": "message", "role": "assistant", "content": []any{}, "model": model,
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 25, "output_tokens": 1},
	}})
	index := 0
	if text != "" {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		event("ping", map[string]any{"type": "ping"})
		for _, f := range strings.Split(text, "\x00") {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": f}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, c := range calls {
		event("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{},
		}})
		half := len(c.Arguments) / 2
		for _, part := range []string{"", c.Arguments[:half], c.Arguments[half:]} {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 15}})
	event("message_stop", map[string]any{"type": "message_stop"})
	return b.String()
}
