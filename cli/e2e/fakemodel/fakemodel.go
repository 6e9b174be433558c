// Package fakemodel serves fake model APIs on loopback for tests that drive
// real MCP clients: the Anthropic Messages API, the OpenAI Responses and
// Chat Completions APIs and the Gemini API, each streaming as the vendor
// documents it. What the fake answers is decided by a [Plan] from the tool
// results the client has sent back so far, so a client's agent loop can be
// walked through a fixed sequence of tool calls.
//
// One [Server] type serves every vendor; only the request parsing and the
// stream encoding differ (see anthropic.go, openai.go and gemini.go).
package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
)

// maxRequestBytes bounds a request body the fake reads.
const maxRequestBytes = 64 << 20

// Step is one model turn: a call of Tool (a bare MCP tool name such as
// "prompt_send"; the fake finds the name the client offers it under) with
// Args, or, when Tool is "", a final Text answer.
type Step struct {
	Tool string
	Args map[string]any
	Text string
}

// Result is a tool result the client sent back: the text of every string
// in it, one per line, and whether the client marked it an error.
type Result struct {
	Text    string
	IsError bool
}

// Plan returns the next step given the results of the steps so far, in
// order.
type Plan func(results []Result) Step

// Exchange is one request the fake answered, for a test's checks and
// failure messages.
type Exchange struct {
	Path    string
	Tools   []string // the tool names the request offered
	Results []Result
	Reply   Step   // what the fake answered, Tool being the name it used
	Note    string // why the reply is not the plan's step, if it is not
}

// Server is a fake model API on loopback.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string

	srv    *httptest.Server
	plan   Plan
	vendor vendor

	mu        sync.Mutex
	exchanges []Exchange
}

// request is what the fake reads from a vendor's request.
type request struct {
	stream  bool
	tools   []string
	results []Result
}

// vendor is one API's request parsing and stream encoding.
type vendor interface {
	// route reports whether path is a request for a model turn, and
	// answers the API's other paths (token counts) itself.
	route(w http.ResponseWriter, r *http.Request) (turn bool)
	parse(path string, body []byte) (request, error)
	write(w http.ResponseWriter, req request, reply Step, callID string)
}

func newServer(v vendor, plan Plan) *Server {
	s := &Server{plan: plan, vendor: v}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Exchanges returns the requests answered so far.
func (s *Server) Exchanges() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.exchanges)
}

// Results returns the tool results of the request that carried the most.
func (s *Server) Results() []Result {
	var best []Result
	for _, e := range s.Exchanges() {
		if len(e.Results) > len(best) {
			best = e.Results
		}
	}
	return best
}

// Log renders the exchanges for a failure message.
func (s *Server) Log() string {
	var b strings.Builder
	for i, e := range s.Exchanges() {
		fmt.Fprintf(&b, "#%d %s tools=%v results=%d reply=%q/%q %s\n", i, e.Path, e.Tools, len(e.Results), e.Reply.Tool, e.Reply.Text, e.Note)
		for j, r := range e.Results {
			fmt.Fprintf(&b, "    result %d (error %v): %.300s\n", j, r.IsError, r.Text)
		}
	}
	return b.String()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "fakemodel: POST only", http.StatusMethodNotAllowed)
		return
	}
	if !s.vendor.route(w, r) {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		http.Error(w, "fakemodel: read the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	req, err := s.vendor.parse(r.URL.Path, body)
	if err != nil {
		s.record(Exchange{Path: r.URL.Path, Note: "bad request: " + err.Error()})
		http.Error(w, "fakemodel: "+err.Error(), http.StatusBadRequest)
		return
	}
	ex := Exchange{Path: r.URL.Path, Tools: req.tools, Results: req.results}
	reply := s.plan(req.results)
	if reply.Tool != "" {
		name, ok := offered(req.tools, reply.Tool)
		if !ok {
			ex.Note = "the plan's tool " + reply.Tool + " is not offered"
			reply = Step{Text: "fakemodel: no tool " + reply.Tool + " offered"}
		} else {
			reply.Tool = name
		}
	}
	ex.Reply = reply
	s.record(ex)
	s.vendor.write(w, req, reply, fmt.Sprintf("call_%d", len(req.results)+1))
}

// routeSuffix is a vendor's route for an API with one path: a turn when
// the path ends in suffix, else 404.
func routeSuffix(w http.ResponseWriter, r *http.Request, suffix string) bool {
	if strings.HasSuffix(r.URL.Path, suffix) {
		return true
	}
	http.NotFound(w, r)
	return false
}

func (s *Server) record(e Exchange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exchanges = append(s.exchanges, e)
}

// offered finds the name a client offers the MCP tool bare under: itself,
// prefixed by the client's server namespace ("mcp__openprogram__x",
// "openprogram_x"), or in a namespace ("mcp__openprogram/x").
func offered(tools []string, bare string) (string, bool) {
	for _, t := range tools {
		if t == bare || strings.HasSuffix(t, "_"+bare) || strings.HasSuffix(t, "/"+bare) {
			return t, true
		}
	}
	return "", false
}

// leafText joins every string in a decoded JSON value, one per line: a
// tool result's text whatever shape the client wraps it in. A string that
// holds a JSON object or list (a client that passes the whole MCP result
// on as text) is walked too.
func leafText(v any) string {
	var parts []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			parts = append(parts, x)
			var inner any
			if t := strings.TrimSpace(x); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Unmarshal([]byte(t), &inner) == nil {
				walk(inner)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k])
			}
		}
	}
	walk(v)
	return strings.Join(parts, "\n")
}

// sse writes one server-sent event (event may be "" for data-only
// streams) and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	raw, err := json.Marshal(data)
	if err != nil {
		panic("fakemodel: encode an event: " + err.Error())
	}
	if event != "" {
		fmt.Fprintf(w, "event: %s\n", event)
	}
	fmt.Fprintf(w, "data: %s\n\n", raw)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func startSSE(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// argsJSON is a step's arguments as a JSON object text.
func argsJSON(args map[string]any) string {
	if args == nil {
		return "{}"
	}
	raw, err := json.Marshal(args)
	if err != nil {
		panic("fakemodel: encode tool arguments: " + err.Error())
	}
	return string(raw)
}
