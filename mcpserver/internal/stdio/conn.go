// Package stdio is the newline-delimited JSON-RPC connection mcpserver runs
// go-sdk over.
//
// go-sdk's own stdio transport ends the session on the first line that is not
// JSON-RPC, accepts batches, answers a cancelled request with whatever the
// handler returned, drops responses that are still due when stdin reaches EOF,
// and rewrites the message of every -32601 error a handler returns. [Conn]
// fixes these at the wire:
//
//   - every line is checked before go-sdk sees it: not JSON gets -32700, JSON
//     that is not a JSON-RPC 2.0 message (arrays included) gets -32600, and
//     reading goes on;
//   - requests for methods outside [Options.Methods] get -32601, and requests
//     other than initialize and ping before the initialize response get
//     -32600, so go-sdk never answers them;
//   - a request the peer cancelled with notifications/cancelled is answered
//     {"code":0,"message":"Request cancelled"}, whatever its handler returns;
//   - on EOF the connection keeps writing while requests are in flight, for at
//     most [Options.DrainTimeout], then calls [Options.OnDrainTimeout], stops
//     writing and reports EOF;
//   - an error set with [Request.SetError] reaches the wire as set;
//   - a failed write (the peer closed stdout) closes the connection as the
//     drain timeout does;
//   - messages are handled in arrival order (nothing behind initialize is
//     looked at before its answer is written), requests in flight are capped
//     by stopping reads, and every error frame is bounded ([MaxErrorBytes]).
//
// The wire contract is docs/contract.md in the repository.
package stdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/openprogram/openprogram/internal/clip"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/internal/schema"
)

// Defaults for [Options].
const (
	DefaultMaxLineLength    = 16 << 20
	DefaultDrainTimeout     = 3 * time.Second
	DefaultMaxInFlight      = 32
	DefaultMaxInFlightBytes = 16 << 20
)

// MaxErrorBytes bounds the "message" and "data" of every error frame the
// connection writes, together, as encoded JSON. Client input echoed in an
// error (a method or tool name, say) is clipped to fit.
const MaxErrorBytes = 1000

// maxErrorMessageBytes is the share of [MaxErrorBytes] a message may take
// before it is clipped.
const maxErrorMessageBytes = 512

// JSON-RPC and MCP method names the connection itself looks at.
const (
	methodInitialize = "initialize"
	methodPing       = "ping"
	methodCancelled  = "notifications/cancelled"
)

// CodeRequestCancelled and MessageRequestCancelled are the error a cancelled
// request is answered with (what the reference SDK sends).
const (
	CodeRequestCancelled    = 0
	MessageRequestCancelled = "Request cancelled"
)

// maxJSONDepth is how deeply encoding/json, and so go-sdk, nests values: a
// deeper line is not read as JSON at all.
const maxJSONDepth = 10000

// maxSafeInteger bounds numeric request ids: go-sdk decodes ids through
// float64, so a larger integer would come back as a different number.
const maxSafeInteger = 1<<53 - 1

// requestKey is the key under which a request's [Request] rides in
// mcp.RequestExtra.TokenInfo.Extra (stdio has no bearer token of its own).
const requestKey = "openprogram.jsonrpc.request"

// Options configure a [Conn]. The zero value is usable but serves no methods.
type Options struct {
	// Methods lists the request methods the server answers (initialize and
	// ping included). Requests for any other method are answered -32601 by
	// the connection. Notifications are always passed on.
	Methods []string
	// MaxLineLength bounds one inbound line in bytes; 0 means
	// DefaultMaxLineLength. A longer line is answered -32600 and skipped;
	// its bytes are discarded as they are read, never held whole.
	MaxLineLength int
	// MaxInFlight caps the requests in flight (read, not yet answered); 0
	// means DefaultMaxInFlight. At the cap the connection stops reading its
	// input until a request is answered: flow control, never an error.
	MaxInFlight int
	// MaxInFlightBytes caps the bytes held for the requests in flight: the
	// lines of the requests, the bytes their handlers reserved for their
	// responses ([Request.Reserve]) and the response frames not yet
	// written; 0 means DefaultMaxInFlightBytes. A request that would pass
	// it waits, with reading stopped, until enough others are answered (a
	// request alone is always admitted).
	MaxInFlightBytes int
	// CheckParams, if set, checks the params of every request admitted
	// after initialization, raw as they arrived, before go-sdk decodes
	// them. A non-nil error answers the request as it is (its message
	// bounded like every error's), and go-sdk never sees it. It runs on the
	// read loop, so it must be quick and must not block.
	CheckParams func(method string, params json.RawMessage) *jsonrpc.Error
	// DrainTimeout bounds how long responses still due are awaited after
	// EOF; 0 means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// OnDrainTimeout, if set, is called once when the connection gives up
	// on the requests in flight: DrainTimeout expired after EOF, a write to
	// out failed (the peer closed it), or [Conn.Abort] was called. It runs
	// after writing has stopped and before Read reports EOF (which cancels
	// every remaining handler context).
	OnDrainTimeout func()
	// Detach names, per request method, a member of the params that go-sdk
	// is not given: it is cut out of the params handed on (the rest is
	// copied) and kept on the [Request] ([Request.Detached]) for the
	// server's own handlers. CheckParams and Handlers see the params whole.
	// It keeps the bulk of a large request (tools/call "arguments") from
	// being decoded and copied again by go-sdk, which never reads it.
	Detach map[string]string
	// Handlers answers methods in the connection itself, never through
	// go-sdk: a request for one of them, admitted like any other (after
	// initialization, within the in-flight caps, CheckParams applied), runs
	// its handler on a goroutine of its own, and the connection writes the
	// answer. The handler's ctx ends when the peer cancels the request
	// (notifications/cancelled) or the connection gives up (see
	// OnDrainTimeout). These methods need not be listed in Methods.
	Handlers map[string]Handler
	// Logger receives diagnostics (never line contents); nil discards.
	Logger *slog.Logger
}

// Handler answers one request the connection serves itself (see
// [Options.Handlers]): a result (JSON) or an error, never both.
type Handler func(ctx context.Context, r *Request, params json.RawMessage) (json.RawMessage, *jsonrpc.Error)

// Conn is an mcp.Connection and mcp.Transport over a reader and a writer
// carrying newline-delimited JSON-RPC. Its Connect method returns the Conn
// itself and must be used once.
type Conn struct {
	in      io.Reader
	out     io.Writer
	methods map[string]bool
	maxLine int
	maxReqs int
	maxHeld int
	params  func(method string, params json.RawMessage) *jsonrpc.Error
	detach  map[string]string
	own     map[string]Handler
	// ownCtx is the parent of every own handler's context; Abort and Close
	// end it.
	ownCtx    context.Context
	ownCancel context.CancelFunc
	drain     time.Duration
	onDrain   func()
	log       *slog.Logger

	incoming  chan jsonrpc.Message // from the read loop to Read
	eof       chan struct{}        // closed by the read loop when input ends
	closed    chan struct{}        // closed by Close
	closeOnce sync.Once
	startOnce sync.Once

	writeMu sync.Mutex // serialises writes to out

	// line is the read loop's buffer, reused from one line to the next so
	// that a client sending maximal lines costs one buffer of at most
	// MaxLineLength+2 bytes, not a fresh, regrown one per line. Only the read
	// loop touches it; nothing handed on aliases it (decoding copies).
	line []byte

	mu           sync.Mutex
	inflight     map[jsonrpc.ID]*Request
	held         int           // bytes held for requests until their responses are written (see MaxInFlightBytes)
	reserved     int           // the part of held that handlers reserved with Request.Reserve
	changed      chan struct{} // closed and replaced whenever inflight shrinks
	initID       *jsonrpc.ID   // id of the initialize request in flight
	initialized  bool          // an initialize request was answered with a result
	writesClosed bool          // set after the drain timeout: nothing more is written
	eofReported  bool
}

// New returns a connection reading in and writing out. It starts reading
// only when go-sdk first calls Read.
func New(in io.Reader, out io.Writer, opts Options) *Conn {
	c := &Conn{
		in:       in,
		out:      out,
		methods:  make(map[string]bool, len(opts.Methods)),
		maxLine:  opts.MaxLineLength,
		maxReqs:  opts.MaxInFlight,
		maxHeld:  opts.MaxInFlightBytes,
		params:   opts.CheckParams,
		detach:   opts.Detach,
		own:      opts.Handlers,
		drain:    opts.DrainTimeout,
		onDrain:  opts.OnDrainTimeout,
		log:      opts.Logger,
		incoming: make(chan jsonrpc.Message),
		eof:      make(chan struct{}),
		closed:   make(chan struct{}),
		inflight: make(map[jsonrpc.ID]*Request),
		changed:  make(chan struct{}),
	}
	for _, m := range opts.Methods {
		c.methods[m] = true
	}
	c.ownCtx, c.ownCancel = context.WithCancel(context.Background())
	if c.maxLine <= 0 {
		c.maxLine = DefaultMaxLineLength
	}
	if c.maxReqs <= 0 {
		c.maxReqs = DefaultMaxInFlight
	}
	if c.maxHeld <= 0 {
		c.maxHeld = DefaultMaxInFlightBytes
	}
	if c.drain <= 0 {
		c.drain = DefaultDrainTimeout
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Connect implements mcp.Transport.
func (c *Conn) Connect(context.Context) (mcp.Connection, error) { return c, nil }

// SessionID implements mcp.Connection; stdio has no session id.
func (c *Conn) SessionID() string { return "" }

// Read implements mcp.Connection. It returns the next well-formed message;
// after the input ends it waits for in-flight requests (see
// [Options.DrainTimeout]) and then returns io.EOF.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.startOnce.Do(func() { go c.readLoop() })
	select {
	case msg := <-c.incoming:
		return msg, nil
	case <-c.eof:
		return nil, c.drainThenEOF(ctx)
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// drainThenEOF waits until no request is in flight or the drain timeout
// expires, and returns io.EOF.
func (c *Conn) drainThenEOF(ctx context.Context) error {
	timer := time.NewTimer(c.drain)
	defer timer.Stop()
	for {
		c.mu.Lock()
		if c.eofReported || len(c.inflight) == 0 {
			c.eofReported = true
			c.mu.Unlock()
			return io.EOF
		}
		changed := c.changed
		n := len(c.inflight)
		c.mu.Unlock()
		select {
		case <-changed:
		case <-c.closed:
			return io.EOF
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			c.log.Warn("stdin closed with requests still running; cancelling them", "requests", n)
			c.Abort()
			return io.EOF
		}
	}
}

// Abort stops all writing, calls [Options.OnDrainTimeout] if set, and makes
// Read report EOF. Responses of requests still in flight are never written.
// It is what the drain timeout does, and what a caller does to stop serving
// at once.
func (c *Conn) Abort() {
	c.mu.Lock()
	first := !c.writesClosed
	c.writesClosed = true
	c.eofReported = true
	c.mu.Unlock()
	if first && c.onDrain != nil {
		c.onDrain()
	}
	c.ownCancel()
	c.closeOnce.Do(func() { close(c.closed) })
}

// Write implements mcp.Connection. Writes are serialised; each message is
// one line. A response to a request the peer cancelled is replaced by the
// code-0 cancellation error; a response whose request carries an error set
// by [Request.SetError] gets that error.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var answered *Request
	if resp, ok := msg.(*jsonrpc.Response); ok {
		resp, answered = c.finish(resp)
		if resp.Error != nil {
			resp = &jsonrpc.Response{ID: resp.ID, Error: boundError(wireError(resp.Error))}
		}
		msg = resp
	}
	line, err := encodeLine(msg)
	if err == nil {
		if answered != nil {
			c.hold(answered, len(line))
		}
		err = c.writeLine(line)
	} else {
		err = fmt.Errorf("encode JSON-RPC message: %w", err)
	}
	if answered != nil {
		c.release(answered)
		close(answered.answered)
	}
	return err
}

// hold counts the part of a response frame of n bytes that its request's
// reservation does not cover against the budget until [Conn.release]: a
// frame waiting for a slow reader keeps the read loop from admitting more.
func (c *Conn) hold(r *Request, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if extra := n - r.reserved; extra > 0 {
		r.size += extra
		c.held += extra
	}
}

// release returns the bytes held for r, its response written (or dropped),
// to the budget.
func (c *Conn) release(r *Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held -= r.size
	c.reserved -= r.reserved
	r.size, r.reserved = 0, 0
	close(c.changed)
	c.changed = make(chan struct{})
}

// encodeLine returns msg as one newline-terminated frame, byte for byte
// what jsonrpc.EncodeMessage writes followed by "\n".
//
// A successful response is framed by hand around its result: go-sdk builds
// every Response.Result with its own encoder (jsonrpc2.NewResponse), so the
// result is already compact JSON, and EncodeMessage would only copy it
// through encoding/json's compactor once more, a full scan of what is
// usually the largest part of the frame. TestEncodeLine holds the two to
// each other.
func encodeLine(msg jsonrpc.Message) ([]byte, error) {
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error == nil && len(resp.Result) > 0 {
		var line []byte
		switch id := resp.ID.Raw().(type) {
		case int64:
			line = make([]byte, 0, len(resp.Result)+48)
			line = append(line, `{"jsonrpc":"2.0","id":`...)
			line = strconv.AppendInt(line, id, 10)
			line = append(line, ',')
		case string:
			var buf bytes.Buffer
			buf.Grow(len(resp.Result) + len(id) + 48)
			buf.WriteString(`{"jsonrpc":"2.0","id":`)
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // as go-sdk's encoder
			if err := enc.Encode(id); err != nil {
				return nil, err
			}
			line = append(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), ',')
		case nil:
			line = make([]byte, 0, len(resp.Result)+32)
			line = append(line, `{"jsonrpc":"2.0",`...) // "id" is omitempty
		}
		if line != nil {
			line = append(line, `"result":`...)
			line = append(line, resp.Result...)
			return append(line, '}', '\n'), nil
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// finish retires the request resp answers and returns the response to send
// and the retired request (nil when resp answers none in flight).
func (c *Conn) finish(resp *jsonrpc.Response) (*jsonrpc.Response, *Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.inflight[resp.ID]
	if r == nil {
		return resp, nil
	}
	delete(c.inflight, resp.ID)
	r.retired = true // its bytes stay held until the frame is written (release)
	close(c.changed)
	c.changed = make(chan struct{})
	if c.initID != nil && *c.initID == resp.ID {
		c.initID = nil
		if resp.Error == nil {
			c.initialized = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.cancelled:
		resp = &jsonrpc.Response{ID: resp.ID, Error: &jsonrpc.Error{Code: CodeRequestCancelled, Message: MessageRequestCancelled}}
	case r.err != nil && resp.Error != nil:
		resp = &jsonrpc.Response{ID: resp.ID, Error: r.err}
	}
	return resp, r
}

// writeLine writes one frame, which ends in a newline. A failed write (EPIPE
// when the peer closed its end of stdout) is a closed connection: the
// connection aborts (see [Conn.Abort]) and the error is returned.
func (c *Conn) writeLine(line []byte) error {
	err := c.writeOut(line)
	if err != nil {
		c.log.Warn("writing stdout failed: the connection is closed", "error", err)
		c.Abort()
	}
	return err
}

// writeOut writes line to stdout under writeMu, unless writes are closed
// (then it writes nothing and returns nil).
func (c *Conn) writeOut(line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	closed := c.writesClosed
	c.mu.Unlock()
	if closed {
		return nil
	}
	if _, err := c.out.Write(line); err != nil {
		return fmt.Errorf("write to stdout: %w", err)
	}
	return nil
}

// Close implements mcp.Connection. It closes the input when it is an
// io.Closer, to unblock the read loop.
func (c *Conn) Close() error {
	var err error
	c.ownCancel()
	c.closeOnce.Do(func() { close(c.closed) })
	if cl, ok := c.in.(io.Closer); ok {
		err = cl.Close()
	}
	return err
}

// readLoop reads lines until the input ends or the connection closes,
// answering bad lines itself and handing the rest to Read.
func (c *Conn) readLoop() {
	defer close(c.eof)
	br := newLineReader(c)
	for {
		line, tooLong, err := c.readLine(br)
		if line != nil || tooLong {
			if msg := c.check(line, tooLong); msg != nil {
				select {
				case c.incoming <- msg:
				case <-c.closed:
					return
				}
				// Messages are handled in arrival order: nothing behind
				// initialize is looked at before its answer is written,
				// so a request pipelined behind it meets the state that
				// answer leaves.
				if r := initializeOf(msg); r != nil {
					select {
					case <-r.answered:
					case <-c.closed:
						return
					}
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.log.Warn("reading stdin failed; treating it as end of input", "error", err)
			}
			return
		}
		select {
		case <-c.closed:
			return
		default:
		}
	}
}

// newLineReader buffers the connection's input for readLine.
func newLineReader(c *Conn) *bufio.Reader { return bufio.NewReaderSize(c.in, 64<<10) }

// readLine returns the next line without its terminator. tooLong reports a
// line over the limit (whose bytes are discarded). err is set once the
// input ends; a final unterminated line is returned together with it.
func (c *Conn) readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	buf := c.line[:0]
	defer func() {
		if cap(buf) > cap(c.line) {
			c.line = buf[:0] // keep the grown buffer for the next line
		}
	}()
	for {
		chunk, rerr := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > c.maxLine+2 { // room for "\r\n"
				tooLong, buf = true, buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(rerr, bufio.ErrBufferFull) {
			continue
		}
		if rerr != nil && len(buf) == 0 && !tooLong {
			return nil, false, rerr
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		if !tooLong && len(buf) > c.maxLine {
			tooLong = true
		}
		if tooLong {
			return nil, true, rerr
		}
		if buf == nil {
			buf = []byte{}
		}
		return buf, false, rerr
	}
}

// maxDepth bounds the nesting of objects and arrays in a line, as go-sdk's
// own decoder does (jsonrpc.DecodeMessage refuses a deeper message).
const maxDepth = 1000

// check classifies one line. It answers lines that are not acceptable
// requests itself and returns nil for them; otherwise it returns the message
// to hand to go-sdk, which shares no memory with line.
//
// A line is checked once (json.Valid), the members of its top-level object
// are found where they lie ([schema.Members]), and a request is built from them
// with one copy of its params (what jsonrpc.DecodeMessage would return,
// without decoding the line and copying its params;
// TestCheckDecodesAsGoSDK holds the two to each other).
func (c *Conn) check(line []byte, tooLong bool) jsonrpc.Message {
	if tooLong {
		c.log.Warn("rejected an over-long line", "limit", c.maxLine)
		c.reject(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: line longer than %d bytes", c.maxLine))
		return nil
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil // blank lines carry nothing
	}
	notJSON := func() jsonrpc.Message {
		if schema.CheckDepth(trimmed, maxJSONDepth) != nil {
			// Perhaps valid JSON, but deeper than encoding/json (and so
			// go-sdk) reads: its id cannot be read either.
			c.log.Warn("rejected a line nested too deeply", "limit", maxJSONDepth)
			c.reject(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: JSON nested deeper than %d levels", maxJSONDepth))
			return nil
		}
		c.log.Warn("rejected a line that is not JSON", "bytes", len(line))
		c.reject(nil, jsonrpc.CodeParseError, "parse error: line is not valid JSON")
		return nil
	}
	if trimmed[0] != '{' {
		switch {
		case !json.Valid(trimmed):
			return notJSON()
		case trimmed[0] == '[':
			c.log.Warn("rejected a JSON-RPC batch")
			c.reject(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported")
		default:
			c.reject(nil, jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC object")
		}
		return nil
	}
	// An object: the whole line is checked before its members are read;
	// they are read where they lie (the last of a name counting, as when
	// decoding), and only the params of a request are copied.
	if !json.Valid(trimmed) {
		return notJSON()
	}
	obj := make(map[string]json.RawMessage, 4)
	schema.Members(trimmed, func(name string, _, value []byte) { obj[name] = value })
	id, idErr := parseID(obj)
	invalid := func(msg string) jsonrpc.Message {
		c.log.Warn("rejected an invalid JSON-RPC message", "reason", msg)
		c.reject(id, jsonrpc.CodeInvalidRequest, "invalid request: "+msg)
		return nil
	}
	if idErr != "" {
		return invalid(idErr)
	}
	if v, ok := obj["jsonrpc"]; !ok || string(v) != `"2.0"` {
		return invalid(`"jsonrpc" must be "2.0"`)
	}
	rawMethod, isRequest := obj["method"]
	if !isRequest {
		return c.checkResponse(trimmed, obj, id)
	}
	var method string
	if rawMethod = bytes.TrimSpace(rawMethod); rawMethod[0] != '"' || json.Unmarshal(rawMethod, &method) != nil {
		return invalid(`"method" must be a string`)
	}
	if _, ok := obj["result"]; ok {
		return invalid(`a request has no "result"`)
	}
	if _, ok := obj["error"]; ok {
		return invalid(`a request has no "error"`)
	}
	if p, ok := obj["params"]; ok {
		switch bytes.TrimSpace(p)[0] {
		case '{', 'n':
		case '[':
			// A valid JSON-RPC request, but MCP params are objects.
			c.reject(id, jsonrpc.CodeInvalidParams, `invalid params: "params" must be an object`)
			return nil
		default:
			return invalid(`"params" must be an object`)
		}
	}
	if schema.CheckDepth(trimmed, maxDepth) != nil {
		return invalid("cannot decode message")
	}
	req := &jsonrpc.Request{Method: method, Params: bytes.Clone(obj["params"])}
	if id != nil {
		req.ID = *id
	}
	if id == nil {
		if method == methodCancelled {
			c.markCancelled(req.Params)
		}
		return req
	}
	return c.admit(req, len(trimmed))
}

// cutMember returns params, a JSON object, without its member name, and
// that member's value (nil when there is none). Of several members of that
// name the last one's value is returned, as decoding would keep it, and all
// are cut. params that are not an object, or have no such member, are
// returned as they are; otherwise the rest is a new slice and the value
// shares params' memory.
func cutMember(params json.RawMessage, name string) (rest, value json.RawMessage) {
	data := bytes.TrimSpace(params)
	if len(data) == 0 || data[0] != '{' {
		return params, nil
	}
	var kept [][]byte // the other members, key to value
	found := false
	schema.Members(data, func(n string, member, v []byte) {
		if n == name {
			value, found = v, true
		} else {
			kept = append(kept, member)
		}
	})
	if !found {
		return params, nil
	}
	n := 2
	for _, m := range kept {
		n += len(m) + 1
	}
	rest = make(json.RawMessage, 0, n)
	rest = append(rest, '{')
	rest = append(rest, bytes.Join(kept, []byte{','})...)
	return append(rest, '}'), value
}

// initializeOf returns the connection's record of msg when msg is an
// admitted initialize request, and nil otherwise.
func initializeOf(msg jsonrpc.Message) *Request {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != methodInitialize || !req.ID.IsValid() {
		return nil
	}
	extra, ok := req.Extra.(*mcp.RequestExtra)
	if !ok {
		return nil // not admitted by this connection: no record
	}
	return RequestOf(&mcp.ServerRequest[*mcp.InitializeParams]{Extra: extra})
}

// checkResponse validates a response from the peer. A bad one is answered
// with a null id: its id names a request of ours (the id spaces of the two
// peers are separate), so echoing it could read as the answer to one of
// the peer's own requests.
func (c *Conn) checkResponse(line []byte, obj map[string]json.RawMessage, id *jsonrpc.ID) jsonrpc.Message {
	invalid := func(msg string) jsonrpc.Message {
		c.log.Warn("rejected an invalid JSON-RPC response", "reason", msg)
		c.reject(nil, jsonrpc.CodeInvalidRequest, "invalid request: "+msg)
		return nil
	}
	if id == nil {
		return invalid(`a response needs an "id"`)
	}
	_, hasResult := obj["result"]
	rawErr, hasError := obj["error"]
	if hasResult == hasError {
		return invalid(`a response has exactly one of "result" and "error"`)
	}
	if hasError {
		var e struct {
			Code    *json.Number `json:"code"`
			Message *string      `json:"message"`
		}
		if json.Unmarshal(rawErr, &e) != nil || e.Code == nil || e.Message == nil {
			return invalid(`"error" needs an integer "code" and a string "message"`)
		}
		if _, err := e.Code.Int64(); err != nil {
			return invalid(`"error" needs an integer "code" and a string "message"`)
		}
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return invalid("cannot decode message")
	}
	return msg
}

// admit applies the method and initialization gates to a call of size
// bytes and records it as in flight. While the in-flight caps leave no room
// for it, it waits (and so the read loop reads nothing more).
func (c *Conn) admit(req *jsonrpc.Request, size int) jsonrpc.Message {
	id := req.ID
	handler := c.own[req.Method]
	if !c.methods[req.Method] && handler == nil {
		c.log.Warn("rejected a request for an unserved method", "method", req.Method)
		c.reject(&id, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method not found: %q", req.Method))
		return nil
	}
	c.mu.Lock()
	for len(c.inflight) > 0 && (len(c.inflight) >= c.maxReqs || c.held+size > c.maxHeld) {
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-c.closed:
			return nil
		}
		c.mu.Lock()
	}
	var msg string
	replyID := &id
	switch {
	case c.inflight[id] != nil:
		// Answering with the id would read as the answer to the request
		// that holds it.
		msg, replyID = "invalid request: request id already in use", nil
	case req.Method == methodInitialize && (c.initialized || c.initID != nil):
		msg = `invalid request: duplicate "initialize"`
	case !c.initialized && req.Method != methodInitialize && req.Method != methodPing:
		msg = fmt.Sprintf("invalid request: %q before initialization", req.Method)
	}
	if msg != "" {
		c.mu.Unlock()
		c.log.Warn("rejected a request", "method", req.Method, "reason", msg)
		c.reject(replyID, jsonrpc.CodeInvalidRequest, msg)
		return nil
	}
	r := &Request{conn: c, id: id, method: req.Method, params: req.Params, size: size, answered: make(chan struct{})}
	c.inflight[id] = r
	c.held += size
	if req.Method == methodInitialize {
		c.initID = &id
	}
	checked := c.initialized && c.params != nil
	c.mu.Unlock()
	if checked {
		if e := c.params(req.Method, req.Params); e != nil {
			c.log.Warn("rejected the params of a request", "method", req.Method, "reason", e.Message)
			if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Error: e}); err != nil {
				c.log.Warn("write error response", "error", err)
			}
			return nil
		}
	}
	if handler != nil {
		c.serveOwn(handler, r, req.Params)
		return nil
	}
	if member, ok := c.detach[req.Method]; ok {
		req.Params, r.detached = cutMember(req.Params, member)
	}
	req.Extra = &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{Extra: map[string]any{requestKey: r}}}
	return req
}

// serveOwn runs the handler of a method the connection serves itself and
// writes its answer.
func (c *Conn) serveOwn(h Handler, r *Request, params json.RawMessage) {
	ctx, cancel := context.WithCancel(c.ownCtx)
	r.mu.Lock()
	r.cancel = cancel
	r.mu.Unlock()
	go func() {
		defer cancel()
		var (
			res  json.RawMessage
			rerr *jsonrpc.Error
		)
		func() {
			defer func() {
				if p := recover(); p != nil {
					c.log.Error("request handler panicked", "method", r.method, "panic", fmt.Sprint(p))
					res, rerr = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
				}
			}()
			res, rerr = h(ctx, r, params)
		}()
		resp := &jsonrpc.Response{ID: r.id, Result: res}
		if rerr != nil {
			resp = &jsonrpc.Response{ID: r.id, Error: rerr}
		}
		if err := c.Write(context.Background(), resp); err != nil {
			c.log.Warn("write response", "method", r.method, "error", err)
		}
	}()
}

// Notify writes a notification from the server (method and params, which
// must encode as a JSON object). Nothing is written once writing stopped.
func (c *Conn) Notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encode %s params: %w", method, err)
	}
	return c.Write(context.Background(), &jsonrpc.Request{Method: method, Params: raw})
}

// markCancelled flags the request a notifications/cancelled names.
func (c *Conn) markCancelled(params json.RawMessage) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	c.mu.Lock()
	r := c.inflight[id]
	isInit := c.initID != nil && *c.initID == id
	c.mu.Unlock()
	if r == nil || isInit { // initialize cannot be cancelled
		return
	}
	r.mu.Lock()
	r.cancelled = true
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// reject writes an error response the connection produced itself. A nil id
// leaves the "id" member out: the MCP schema's RequestId has no null, and
// it expresses an id that cannot be determined (or echoed) by its absence.
func (c *Conn) reject(id *jsonrpc.ID, code int64, message string) {
	var raw any
	if id != nil {
		raw = id.Raw()
	}
	data, err := json.Marshal(struct {
		JSONRPC string         `json:"jsonrpc"`
		ID      any            `json:"id,omitempty"`
		Error   *jsonrpc.Error `json:"error"`
	}{"2.0", raw, boundError(&jsonrpc.Error{Code: code, Message: message})})
	if err != nil {
		c.log.Error("encode error response", "error", err)
		return
	}
	if err := c.writeLine(append(data, '\n')); err != nil {
		c.log.Warn("write error response", "error", err)
	}
}

// boundError returns e with its message and data within [MaxErrorBytes] as
// encoded JSON: a longer message is clipped on a UTF-8 boundary and marked
// with "...", and data that does not fit beside it is dropped. Every error
// frame goes through it, so no error echoes more than an excerpt of client
// input.
func boundError(e *jsonrpc.Error) *jsonrpc.Error {
	msgLen := encodedLen(e.Message)
	if msgLen+len(e.Data) <= MaxErrorBytes {
		return e
	}
	out := &jsonrpc.Error{Code: e.Code, Message: e.Message}
	if msgLen > maxErrorMessageBytes {
		keep := maxErrorMessageBytes
		for {
			out.Message = clip.String(e.Message, keep) // marked with clip.Marker
			if msgLen = encodedLen(out.Message); msgLen <= maxErrorMessageBytes {
				break
			}
			keep /= 2 // escapes made it longer than its bytes
		}
	}
	if msgLen+len(e.Data) <= MaxErrorBytes {
		out.Data = e.Data
	}
	return out
}

// wireError is err as the error object go-sdk's encoder writes for it.
func wireError(err error) *jsonrpc.Error {
	if we, ok := err.(*jsonrpc.Error); ok {
		return we
	}
	out := &jsonrpc.Error{Message: err.Error()}
	var wrapped *jsonrpc.Error
	if errors.As(err, &wrapped) {
		out.Code = wrapped.Code
	}
	return out
}

// encodedLen is the length of s encoded as a JSON string.
func encodedLen(s string) int {
	b, err := json.Marshal(s)
	if err != nil {
		return math.MaxInt
	}
	return len(b)
}

// parseID extracts a request id. It returns a nil id when there is none or
// it is unusable, and a reason when it is present but unusable.
func parseID(obj map[string]json.RawMessage) (*jsonrpc.ID, string) {
	raw, ok := obj["id"]
	if !ok {
		return nil, ""
	}
	const bad = `"id" must be a string or an integer`
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, bad
		}
		id, _ := jsonrpc.MakeID(s)
		return &id, ""
	case len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9'):
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
			return nil, bad
		}
		id, _ := jsonrpc.MakeID(float64(n))
		return &id, ""
	}
	return nil, bad
}

// Request is the connection's record of one request in flight. Handlers
// find it with [RequestOf].
type Request struct {
	conn   *Conn
	id     jsonrpc.ID
	method string
	params json.RawMessage // as they arrived; the line's bytes are held for them
	// detached is the member of params cut out for go-sdk (Options.Detach).
	detached json.RawMessage
	// Guarded by conn.mu: the bytes held for the request against
	// MaxInFlightBytes (its line, its reservation, its frame beyond the
	// reservation), the reserved part, and whether its response was sent.
	size     int
	reserved int
	retired  bool

	answered chan struct{} // closed once the response is written or dropped

	mu        sync.Mutex
	cancelled bool
	err       *jsonrpc.Error
	cancel    context.CancelFunc // an own handler's context
}

// Params returns the request's params as they arrived (nil when absent).
// The caller must not modify them.
func (r *Request) Params() json.RawMessage { return r.params }

// Detached returns the member of the params that [Options.Detach] kept from
// go-sdk, as it arrived (nil when the params had none). It shares memory
// with [Request.Params]; the caller must not modify it.
func (r *Request) Detached() json.RawMessage { return r.detached }

// Answered is closed once the connection has written (or, after writing
// stopped, dropped) the response to the request.
func (r *Request) Answered() <-chan struct{} { return r.answered }

// Reserve counts n more bytes against the connection's in-flight budget
// ([Options.MaxInFlightBytes]) for the response to r, until that response is
// written. A handler calls it before building a response that may be large,
// with a bound of the response's frame: while the bytes are held the
// connection admits fewer requests, and other handlers' reservations wait.
// It waits while the budget has no room for n bytes and another response
// holds a reservation (so one reservation is always granted and two never
// wait on each other), and returns an error if ctx ends or the connection
// closes first, or if r was already answered.
func (r *Request) Reserve(ctx context.Context, n int) error {
	c := r.conn
	if c == nil || n <= 0 {
		return nil
	}
	c.mu.Lock()
	for !r.retired && c.reserved > 0 && c.held+n > c.maxHeld {
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("reserve %d response bytes: %w", n, ctx.Err())
		case <-c.closed:
			return fmt.Errorf("reserve %d response bytes: %w", n, io.ErrClosedPipe)
		}
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	if r.retired {
		return errors.New("reserve response bytes: the request was already answered")
	}
	r.size += n
	r.reserved += n
	c.held += n
	c.reserved += n
	return nil
}

// ID returns the JSON-RPC id of the request.
func (r *Request) ID() jsonrpc.ID { return r.id }

// SetError records the error the request is answered with, should its
// handler return an error. go-sdk replaces the message of any -32601 error
// a handler returns; the connection writes this one unchanged.
func (r *Request) SetError(e *jsonrpc.Error) {
	r.mu.Lock()
	r.err = e
	r.mu.Unlock()
}

// CancelledByPeer reports whether the peer sent notifications/cancelled for
// the request.
func (r *Request) CancelledByPeer() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancelled
}

// RequestOf returns the connection's record of the request behind req, or
// nil when req did not arrive through a [Conn].
func RequestOf(req mcp.Request) *Request {
	if req == nil {
		return nil
	}
	extra := req.GetExtra()
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	r, _ := extra.TokenInfo.Extra[requestKey].(*Request)
	return r
}

// IDString renders a request id for logs and audit records: strings as
// they are, integers in decimal.
func IDString(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		if v == math.Trunc(v) {
			return strconv.FormatInt(int64(v), 10)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ""
}

// InFlight returns the ids of the requests in flight, for tests and
// diagnostics.
func (c *Conn) InFlight() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.inflight))
	for id := range c.inflight {
		out = append(out, IDString(id))
	}
	slices.Sort(out)
	return out
}
