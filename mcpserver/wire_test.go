package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/openprogram/openprogram/mcpserver/schemacheck"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/conversation"
)

// wire drives Serve over pipes with raw lines, like a client process would,
// and collects every line the server writes. Each server line is checked
// against the MCP schema (by the method of the request it answers).
type wire struct {
	t   testing.TB
	v   *schemacheck.Validator
	inW *io.PipeWriter

	served     chan error
	readerDone chan struct{}

	mu      sync.Mutex
	frames  [][]byte
	taken   int
	methods map[string]string // raw JSON id -> method of the client request
}

func startWire(ctx context.Context, t testing.TB, e *env) *wire {
	t.Helper()
	v, err := schemacheck.New()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	w := &wire{
		t: t, v: v, inW: inW,
		served:     make(chan error, 1),
		readerDone: make(chan struct{}),
		methods:    map[string]string{},
	}
	go func() {
		err := e.srv.Serve(ctx, inR, outW)
		outW.Close()
		w.served <- err
	}()
	go func() {
		defer close(w.readerDone)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 0, 64<<10), 32<<20)
		for sc.Scan() {
			line := bytes.Clone(sc.Bytes())
			w.check(line)
			w.mu.Lock()
			w.frames = append(w.frames, line)
			w.mu.Unlock()
		}
		if err := sc.Err(); err != nil {
			t.Errorf("reading server output: %v", err)
		}
	}()
	return w
}

// check validates one server line against the schema.
func (w *wire) check(line []byte) {
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		w.t.Errorf("server wrote a line that is not a JSON object: %q", line)
		return
	}
	w.mu.Lock()
	method := w.methods[string(head.ID)]
	w.mu.Unlock()
	// A task-augmented tools/call is answered CreateTaskResult, and
	// tasks/result with the CallToolResult of the task's prompt_send.
	var res struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	_ = json.Unmarshal(line, &res)
	var extra string
	switch method {
	case methodTaskCall:
		method = "tools/call"
		if res.Result["task"] != nil { // a server without tasks answers the call itself
			method, extra = "", "CreateTaskResult"
		}
	case "tasks/result":
		extra = "CallToolResult"
	}
	if err := w.v.ServerFrame(line, method); err != nil {
		w.t.Errorf("server frame violates the MCP schema: %v", err)
	}
	if extra != "" && res.Result != nil {
		raw, _ := json.Marshal(res.Result)
		if err := w.v.Def(extra, raw); err != nil {
			w.t.Errorf("server frame %s is no %s: %v", line, extra, err)
		}
	}
}

// methodTaskCall marks a tools/call with params.task in wire.methods.
const methodTaskCall = "tools/call (task)"

// send writes one client line (a newline is added).
func (w *wire) send(line string) {
	w.t.Helper()
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Task json.RawMessage `json:"task"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(line), &head) == nil && head.ID != nil && head.Method != "" {
		if head.Method == "tools/call" && head.Params.Task != nil && string(head.Params.Task) != "null" {
			head.Method = methodTaskCall
		}
		var c bytes.Buffer
		if json.Compact(&c, head.ID) == nil {
			w.mu.Lock()
			w.methods[c.String()] = head.Method
			w.mu.Unlock()
		}
	}
	if _, err := io.WriteString(w.inW, line+"\n"); err != nil {
		w.t.Fatalf("write client line: %v", err)
	}
}

// take returns the server lines written since the last take.
func (w *wire) take() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.frames[w.taken:]
	w.taken = len(w.frames)
	return out
}

// all returns every server line so far.
func (w *wire) all() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][]byte(nil), w.frames...)
}

// close ends the input (EOF), waits for Serve to return and returns its
// error.
func (w *wire) close() error {
	w.inW.Close()
	err := <-w.served
	<-w.readerDone
	return err
}

// handshake is the initialize exchange every session starts with.
var handshake = []string{
	`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wire-test","version":"1"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
}

// stuckTurns is a turn runner whose turns ignore cancellation: they end only
// when release is closed.
type stuckTurns struct {
	started chan<- struct{}
	release <-chan struct{}
}

func (s stuckTurns) ProcessUserTurn(context.Context, runtime.TurnRequest) (runtime.TurnResult, error) {
	s.started <- struct{}{}
	<-s.release
	return runtime.TurnResult{Text: "too late"}, nil
}

// TestStuckTurnIsAbandoned pins the bounded abandon path: at stdin EOF a
// turn that ignores its cancelled context is awaited for the drain timeout,
// then for AbandonAfter, and then given up: Serve returns, the request is
// never answered with the turn's late result, and nothing waits for it.
func TestStuckTurnIsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{}, 1)
		release := make(chan struct{})
		e, err := newEnv(nil)
		if err != nil {
			t.Fatal(err)
		}
		e.turns.instead = stuckTurns{started: started, release: release}
		w := startWire(t.Context(), t, e)
		for _, l := range handshake {
			w.send(l)
		}
		w.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"hang"}}}`)
		<-started
		begin := time.Now()
		if err := w.close(); err != nil {
			t.Errorf("Serve after EOF with a stuck turn = %v, want nil", err)
		}
		if got, want := time.Since(begin), DefaultDrainTimeout+conversation.AbandonAfter; got != want {
			t.Errorf("Serve returned %s after EOF, want drain timeout + AbandonAfter = %s", got, want)
		}
		for _, line := range w.all() {
			if bytes.Contains(line, []byte("too late")) {
				t.Errorf("the abandoned turn's result reached the wire: %s", line)
			}
		}
		close(release)
	})
}
