package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/schemacheck"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
)

// Bounds that keep a broken server from hanging the run.
const (
	// testTimeout bounds every MCP call and wait of one test.
	testTimeout = 30 * time.Second
	// exitTimeout bounds how long a server may take to exit after its stdin
	// closes (the drain timeout is 3s).
	exitTimeout = 15 * time.Second
)

// Backends every store-dependent test runs on.
const (
	sqliteBackend   = "sqlite"
	postgresBackend = "postgres"
)

// The token's environment variable, spelled out rather than imported: the
// tests check the contract, not tokenauth's idea of it.
const envToken = "OPENPROGRAM_MCP_TOKEN"

var validator = func() *schemacheck.Validator {
	v, err := schemacheck.New()
	if err != nil {
		panic(fmt.Sprintf("load the MCP schema: %v", err))
	}
	return v
}()

// forBackends runs fn as one parallel subtest per backend.
func forBackends(t *testing.T, fn func(t *testing.T, backend string), backends ...string) {
	t.Helper()
	if len(backends) == 0 {
		backends = []string{sqliteBackend, postgresBackend}
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// ctxFor returns a context bounded by testTimeout that ends with the test.
func ctxFor(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// install is one fresh OpenProgram installation: its own state directory,
// HOME, token and store.
type install struct {
	t        *testing.T
	root     string // everything of the test lives below
	home     string // OPENPROGRAM_HOME
	userHome string // HOME
	token    string // "" until created
	clientID string // hex(sha256(token))[:16]
	backend  string
}

// newInstall creates a state directory with a token (openprogram mcp token
// create) on backend. The state directory does not exist before.
func newInstall(t *testing.T, backend string) *install {
	t.Helper()
	in := newBareInstall(t, backend)
	in.createToken()
	return in
}

// newBareInstall is newInstall without a token.
func newBareInstall(t *testing.T, backend string) *install {
	t.Helper()
	root := t.TempDir()
	in := &install{
		t:        t,
		root:     root,
		home:     filepath.Join(root, "state"),
		userHome: filepath.Join(root, "home"),
		backend:  backend,
	}
	if err := os.Mkdir(in.userHome, 0o700); err != nil {
		t.Fatalf("create HOME: %v", err)
	}
	if backend == postgresBackend {
		u := pgtest.URL(t, "op_e2e")
		in.set("store.url", u)
	}
	return in
}

func (in *install) createToken() {
	in.t.Helper()
	out := in.mustRun("mcp", "token", "create")
	in.token = strings.TrimSuffix(out, "\n")
	in.clientID = clientIDOf(in.token)
}

// clientIDOf is the contract's client id: hex(sha256(token))[:16].
func clientIDOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])[:16]
}

// env is the environment of every child process: nothing of the test
// runner's OpenProgram settings leaks in.
func (in *install) env(extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + in.userHome,
		"TMPDIR=" + os.TempDir(),
		"OPENPROGRAM_HOME=" + in.home,
		// The race runtime sleeps 1s at exit by default.
		"GORACE=atexit_sleep_ms=0",
	}
	return append(env, extra...)
}

// result is how one CLI run ended.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the binary with args and the install's environment, stdin
// /dev/null, bounded by testTimeout.
func (in *install) run(args ...string) result {
	in.t.Helper()
	return in.runEnv(in.env(), args...)
}

func (in *install) runEnv(env []string, args ...string) result {
	in.t.Helper()
	return in.runExe(binPath, env, args...)
}

// runExe runs exe (the binary, or a link to it) with env and args.
func (in *install) runExe(exe string, env []string, args ...string) result {
	in.t.Helper()
	return in.runWith(exe, env, nil, args...)
}

// runWith runs exe with env, args and stdin (nil: /dev/null).
func (in *install) runWith(exe string, env []string, stdin io.Reader, args ...string) result {
	in.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = env
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		in.t.Fatalf("run openprogram %s: %v", strings.Join(args, " "), err)
	}
	checkStderr(in.t, "openprogram "+strings.Join(args, " "), stderr.String())
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// mustRun runs the binary and fails the test unless it exits 0.
func (in *install) mustRun(args ...string) string {
	in.t.Helper()
	r := in.run(args...)
	if r.code != 0 {
		in.t.Fatalf("openprogram %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// set runs `openprogram config set key value`.
func (in *install) set(key, value string) {
	in.t.Helper()
	in.mustRun("config", "set", key, value)
}

// setJSON sets key to v encoded as JSON.
func (in *install) setJSON(key string, v any) {
	in.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		in.t.Fatalf("encode %s: %v", key, err)
	}
	in.set(key, string(data))
}

// script makes the scripted model replay turns (each `mcp serve` process
// replays them from the first).
func (in *install) script(turns ...scripted.Turn) {
	in.t.Helper()
	data, err := json.Marshal(scripted.Script{Turns: turns})
	if err != nil {
		in.t.Fatalf("encode the script: %v", err)
	}
	path := filepath.Join(in.root, "script.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		in.t.Fatalf("write the script: %v", err)
	}
	in.set("model.provider", "scripted")
	in.set("model.script", path)
}

// say is a model reply without tool calls.
func say(text string) scripted.Turn { return scripted.Turn{Text: text} }

// slowly is a reply of n words streamed one word every delay.
func slowly(n int, delay time.Duration) scripted.Turn {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	return scripted.Turn{Text: strings.Join(words, " "), DelayMS: int(delay / time.Millisecond)}
}

// failing is a model call that fails (class auth: never retried).
func failing() scripted.Turn {
	return scripted.Turn{Error: &scripted.Failure{Class: "auth", Message: "bad key"}}
}

// calls is a reply that asks for tool calls.
func calls(text string, cs ...scripted.ToolCall) scripted.Turn {
	return scripted.Turn{Text: text, ToolCalls: cs}
}

func toolCall(name string, args map[string]any) scripted.ToolCall {
	if args == nil {
		args = map[string]any{}
	}
	data, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return scripted.ToolCall{Name: name, Arguments: data}
}

// auditRecord is one line of `openprogram audit tail --json`.
type auditRecord struct {
	ID        int64           `json:"id"`
	TS        string          `json:"ts"`
	Type      string          `json:"type"`
	Origin    string          `json:"origin"`
	SessionID string          `json:"session_id"`
	Payload   json.RawMessage `json:"payload"`
	Hash      string          `json:"hash"`
}

func (r auditRecord) payload(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.Payload))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("audit record %d payload %s: %v", r.ID, r.Payload, err)
	}
	return m
}

// audit returns every audit record, oldest first, read with the CLI.
func (in *install) audit() []auditRecord {
	in.t.Helper()
	out := in.mustRun("audit", "tail", "--json", "-n", "10000")
	var recs []auditRecord
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var r auditRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			in.t.Fatalf("audit tail --json line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// auditOf returns the records of type typ.
func auditOf(recs []auditRecord, typ string) []auditRecord {
	var out []auditRecord
	for _, r := range recs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// verifyAudit runs `openprogram audit verify` and requires an intact chain.
func (in *install) verifyAudit() {
	in.t.Helper()
	out := in.mustRun("audit", "verify")
	if !strings.HasPrefix(out, "audit log intact: ") {
		in.t.Errorf("audit verify = %q, want it to report an intact log", out)
	}
}

// memorySources returns memory_status's source count, read with tool_call.
func memorySources(t *testing.T, ctx context.Context, c *contracts.Client) float64 {
	t.Helper()
	content, err := c.ToolCall(ctx, "memory_status", nil)
	if err != nil {
		t.Fatalf("tool_call memory_status: %v", err)
	}
	var st struct {
		Sources *float64 `json:"sources"`
	}
	if err := json.Unmarshal([]byte(onlyText(t, content)), &st); err != nil || st.Sources == nil {
		t.Fatalf("memory_status = %s, want {sources,...}: %v", onlyText(t, content), err)
	}
	return *st.Sources
}

// onlyText returns the text of content that is exactly one TextContent.
func onlyText(t *testing.T, content []mcp.Content) string {
	t.Helper()
	if len(content) != 1 {
		t.Fatalf("content has %d items, want 1 text", len(content))
	}
	tc, ok := content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content[0] is %T, want *mcp.TextContent", content[0])
	}
	return tc.Text
}

var (
	dataRace   = regexp.MustCompile(`WARNING: DATA RACE`)
	panicked   = regexp.MustCompile(`(?m)^panic: `)
	stackTrace = regexp.MustCompile(`goroutine \d+ \[`)
)

// checkStderr fails the test on a data race or a panic reported by a child.
func checkStderr(t *testing.T, what, stderr string) {
	t.Helper()
	for _, bad := range []*regexp.Regexp{dataRace, panicked, stackTrace} {
		if bad.MatchString(stderr) {
			t.Errorf("%s: stderr matches %s:\n%s", what, bad, stderr)
			return
		}
	}
}

// lineLog collects a byte stream as lines and lets tests wait for content.
type lineLog struct {
	mu      sync.Mutex
	lines   [][]byte
	partial []byte
	eof     bool
	changed chan struct{}
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) add(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	buf := append(l.partial, p...)
	added := false
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, bytes.Clone(buf[:i]))
		buf = buf[i+1:]
		added = true
	}
	l.partial = bytes.Clone(buf)
	if added {
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

func (l *lineLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.eof {
		l.eof = true
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

func (l *lineLog) snapshot() (lines [][]byte, partial []byte, eof bool, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines), bytes.Clone(l.partial), l.eof, l.changed
}

// frames returns the complete lines parsed as JSON objects; lines that are
// not are skipped here (conn.check reports them).
func (l *lineLog) frames() []frame {
	lines, _, _, _ := l.snapshot()
	out := make([]frame, 0, len(lines))
	for i, line := range lines {
		if f, err := parseFrame(line); err == nil {
			f.index = i
			out = append(out, f)
		}
	}
	return out
}

// waitFor waits until pred holds for the log's frames and returns them.
func (l *lineLog) waitFor(t *testing.T, what string, timeout time.Duration, pred func([]frame) bool) []frame {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		_, _, eof, changed := l.snapshot()
		fs := l.frames()
		if pred(fs) {
			return fs
		}
		if eof {
			t.Fatalf("waiting for %s: the stream ended first", what)
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("waiting for %s: nothing after %s", what, timeout)
		}
	}
}

// frame is one JSON-RPC line.
type frame struct {
	index int
	raw   []byte
	m     map[string]json.RawMessage
}

func parseFrame(line []byte) (frame, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return frame{}, err
	}
	if m == nil {
		return frame{}, errors.New("null")
	}
	return frame{raw: bytes.Clone(line), m: m}, nil
}

func (f frame) method() string {
	var s string
	_ = json.Unmarshal(f.m["method"], &s)
	return s
}

// id is the frame's id as compact JSON, "" when it has none.
func (f frame) id() string {
	raw, ok := f.m["id"]
	if !ok {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func (f frame) isResponse() bool {
	_, hasMethod := f.m["method"]
	return !hasMethod && f.id() != ""
}

// param decodes params.<key> into v and reports whether it was there.
func (f frame) param(key string, v any) bool {
	var params map[string]json.RawMessage
	if json.Unmarshal(f.m["params"], &params) != nil {
		return false
	}
	raw, ok := params[key]
	if !ok {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// progressToken returns the compact JSON of the frame's
// params._meta.progressToken, "" without one.
func (f frame) progressToken() string {
	var meta map[string]json.RawMessage
	if !f.param("_meta", &meta) {
		return ""
	}
	raw, ok := meta["progressToken"]
	if !ok {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// progress is one notifications/progress.
type progress struct {
	index    int // line number on stdout
	token    string
	progress float64
	message  string
}

func progressOf(fs []frame) []progress {
	var out []progress
	for _, f := range fs {
		if f.method() != "notifications/progress" {
			continue
		}
		p := progress{index: f.index}
		var tok json.RawMessage
		f.param("progressToken", &tok)
		var b bytes.Buffer
		if json.Compact(&b, tok) == nil {
			p.token = b.String()
		}
		f.param("progress", &p.progress)
		f.param("message", &p.message)
		out = append(out, p)
	}
	return out
}

// responseTo returns the response to the request with id.
func responseTo(fs []frame, id string) (frame, bool) {
	for _, f := range fs {
		if f.isResponse() && f.id() == id {
			return f, true
		}
	}
	return frame{}, false
}

// tapReader records what it reads into a lineLog.
type tapReader struct {
	r   io.Reader
	log *lineLog
}

func (tr *tapReader) Read(p []byte) (int, error) {
	n, err := tr.r.Read(p)
	if n > 0 {
		tr.log.add(p[:n])
	}
	if err != nil {
		tr.log.end()
	}
	return n, err
}

// Close does nothing: the client ends the session by closing stdin, and the
// harness closes stdout once the server has exited (as CommandTransport does).
func (tr *tapReader) Close() error { return nil }

// tapWriter records what it writes into a lineLog; Close closes once.
type tapWriter struct {
	w    io.WriteCloser
	log  *lineLog
	once sync.Once
	err  error
}

// Write logs p before it writes it: once the server has read a request
// (and perhaps answered it or reported progress for it), the request is in
// the log, so a test never looks it up too early.
func (tw *tapWriter) Write(p []byte) (int, error) {
	tw.log.add(p)
	return tw.w.Write(p)
}

func (tw *tapWriter) Close() error {
	tw.once.Do(func() {
		tw.err = tw.w.Close()
		tw.log.end()
	})
	return tw.err
}

// lockedBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// connOptions configure one `mcp serve` connection.
type connOptions struct {
	clientName, clientVersion string
	// protocolVersion is the version the client asks for; "" lets go-sdk
	// choose (it then tries server/discover first).
	protocolVersion string
}

// conn is one running `openprogram mcp serve` with a go-sdk client session
// over its stdin and stdout. Everything the server writes is recorded (out)
// and checked when the connection closes: every line a JSON-RPC message
// valid under the MCP schema, the exit status, no race or panic on stderr.
type conn struct {
	t        *testing.T
	in       *install
	cmd      *exec.Cmd
	cs       *mcp.ClientSession
	c        *contracts.Client
	out      *lineLog // server -> client, raw
	sent     *lineLog // client -> server, raw
	stdin    *tapWriter
	stdout   *os.File
	stderr   *lockedBuffer
	exited   chan struct{}
	wantExit int

	mu         sync.Mutex
	violations []string
	closeOnce  sync.Once
}

// serve starts `openprogram mcp serve` with the install's token and
// connects a go-sdk client to it. The connection is closed (stdin first)
// and checked when the test ends, unless the test closes it earlier.
func (in *install) serve(opts *connOptions) *conn {
	in.t.Helper()
	o := connOptions{clientName: "openprogram-e2e", clientVersion: "1.0.0", protocolVersion: contracts.ProtocolVersion}
	if opts != nil {
		o = *opts
	}
	c := in.start(envToken + "=" + in.token)
	client := mcp.NewClient(&mcp.Implementation{Name: o.clientName, Version: o.clientVersion},
		&mcp.ClientOptions{ProgressNotificationHandler: contracts.HandleProgress})
	transport := schemacheck.Wrap(&mcp.IOTransport{Reader: &tapReader{r: c.stdout, log: c.out}, Writer: c.stdin}, validator, c.report)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var sopts *mcp.ClientSessionOptions
	if o.protocolVersion != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: o.protocolVersion}
	}
	cs, err := client.Connect(ctx, transport, sopts)
	if err != nil {
		in.t.Fatalf("connect to openprogram mcp serve: %v\nstderr:\n%s", err, c.stderr)
	}
	c.cs = cs
	c.c = contracts.NewClient(cs)
	return c
}

// start starts `openprogram mcp serve` with extraEnv over fresh pipes; the
// caller connects a client to c.stdout and c.stdin.
func (in *install) start(extraEnv ...string) *conn {
	in.t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		in.t.Fatalf("stdin pipe: %v", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		in.t.Fatalf("stdout pipe: %v", err)
	}
	c := &conn{
		t: in.t, in: in,
		out: newLineLog(), sent: newLineLog(),
		stdout: outR, stderr: &lockedBuffer{},
		exited: make(chan struct{}),
	}
	c.stdin = &tapWriter{w: inW, log: c.sent}
	c.cmd = exec.Command(binPath, "mcp", "serve")
	c.cmd.Env = in.env(extraEnv...)
	c.cmd.Stdin, c.cmd.Stdout, c.cmd.Stderr = inR, outW, c.stderr
	err = c.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		in.t.Fatalf("start openprogram mcp serve: %v", err)
	}
	go func() {
		_ = c.cmd.Wait()
		close(c.exited)
	}()
	in.t.Cleanup(c.close)
	return c
}

func (c *conn) report(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violations = append(c.violations, err.Error())
}

// closeStdin ends the server's input (EOF) without closing the client.
func (c *conn) closeStdin() { _ = c.stdin.Close() }

// waitExit waits for the server to exit and returns its exit code. After
// timeout it kills it and fails the test.
func (c *conn) waitExit(timeout time.Duration) int {
	c.t.Helper()
	select {
	case <-c.exited:
	case <-time.After(timeout):
		c.t.Errorf("openprogram mcp serve did not exit within %s of its stdin closing; killing it\nstderr:\n%s", timeout, c.stderr)
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	return c.cmd.ProcessState.ExitCode()
}

// close closes the client session (which closes the server's stdin), waits
// for the server to exit and checks the whole conversation.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		t := c.t
		var closed chan struct{}
		if c.cs != nil {
			closed = make(chan struct{})
			go func() {
				_ = c.cs.Close()
				close(closed)
			}()
		} else {
			c.closeStdin()
		}
		code := c.waitExit(exitTimeout)
		if closed != nil {
			select {
			case <-closed:
			case <-time.After(exitTimeout):
				t.Errorf("the client session did not close after the server exited")
			}
		}
		c.stdout.Close()
		if code != c.wantExit {
			t.Errorf("openprogram mcp serve exit status = %d, want %d\nstderr:\n%s", code, c.wantExit, c.stderr)
		}
		checkStderr(t, "openprogram mcp serve", c.stderr.String())
		c.check()
	})
}

// check requires every line the server wrote to stdout to be a JSON-RPC 2.0
// message valid under the MCP 2025-11-25 schema (responses against the
// result type of the request they answer), and no schema violation seen by
// the client's transport.
func (c *conn) check() {
	t := c.t
	t.Helper()
	c.mu.Lock()
	violations := slices.Clone(c.violations)
	c.mu.Unlock()
	for _, v := range violations {
		t.Errorf("schema violation in a frame the client read: %s", v)
	}
	methods := map[string]string{}
	for _, f := range c.sent.frames() {
		if m := f.method(); m != "" && f.id() != "" {
			methods[f.id()] = m
		}
	}
	lines, partial, _, _ := c.out.snapshot()
	if len(partial) > 0 {
		t.Errorf("stdout ends with an unterminated line %q", partial)
	}
	for i, line := range lines {
		f, err := parseFrame(line)
		if err != nil {
			t.Errorf("stdout line %d is not a JSON object: %q", i, line)
			continue
		}
		if string(f.m["jsonrpc"]) != `"2.0"` {
			t.Errorf("stdout line %d has jsonrpc %s, want \"2.0\": %s", i, f.m["jsonrpc"], line)
		}
		// An error whose id cannot be echoed has no "id" member (the
		// schema check below refuses "id": null); go-sdk's decoder wants an
		// id on every response, so those are left to the schema check.
		_, hasID := f.m["id"]
		_, isError := f.m["error"]
		if hasID || !isError {
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				t.Errorf("stdout line %d is not a JSON-RPC message: %v: %s", i, err, line)
			}
		}
		method := ""
		if f.isResponse() {
			method = methods[f.id()]
		}
		if err := validator.ServerFrame(line, method); err != nil {
			t.Errorf("stdout line %d: %v", i, err)
		}
	}
}

// callsTo returns the tools/call requests the client sent for tool, in order.
func (c *conn) callsTo(tool string) []frame {
	var out []frame
	for _, f := range c.sent.frames() {
		var name string
		if f.method() == "tools/call" && f.param("name", &name) && name == tool {
			out = append(out, f)
		}
	}
	return out
}

// lastCallTo returns the last tools/call request for tool.
func (c *conn) lastCallTo(tool string) frame {
	c.t.Helper()
	fs := c.callsTo(tool)
	if len(fs) == 0 {
		c.t.Fatalf("the client sent no tools/call for %s", tool)
	}
	return fs[len(fs)-1]
}

// progressFor returns the progress notifications on stdout that carry the
// progress token of request req.
func (c *conn) progressFor(req frame) []progress {
	tok := req.progressToken()
	if tok == "" {
		return nil
	}
	var out []progress
	for _, p := range progressOf(c.out.frames()) {
		if p.token == tok {
			out = append(out, p)
		}
	}
	return out
}

// waitSent waits until the client has written a tools/call for tool (n-th,
// counting from 1) and returns it.
func (c *conn) waitSent(tool string, n int) frame {
	c.t.Helper()
	c.sent.waitFor(c.t, fmt.Sprintf("tools/call %s #%d to be sent", tool, n), testTimeout, func([]frame) bool {
		return len(c.callsTo(tool)) >= n
	})
	return c.callsTo(tool)[n-1]
}

// waitResponse waits for the server's response to the request id.
func (c *conn) waitResponse(id string) frame {
	c.t.Helper()
	fs := c.out.waitFor(c.t, "the response to request "+id, testTimeout, func(fs []frame) bool {
		_, ok := responseTo(fs, id)
		return ok
	})
	f, _ := responseTo(fs, id)
	return f
}

// errorObject returns the raw "error" member of a response.
func errorObject(t *testing.T, f frame) json.RawMessage {
	t.Helper()
	raw, ok := f.m["error"]
	if !ok {
		t.Fatalf("response %s has no error: %s", f.id(), f.raw)
	}
	return raw
}

// rpcError calls tool with args directly through the session and returns
// the JSON-RPC error it must fail with.
func rpcError(t *testing.T, ctx context.Context, c *conn, tool string, args any) *jsonrpc.Error {
	t.Helper()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err == nil {
		t.Fatalf("tools/call %s %v = result %+v, want a JSON-RPC error", tool, args, res)
	}
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("tools/call %s %v error = %v (%T), want a JSON-RPC error", tool, args, err, err)
	}
	return werr
}

// canonical decodes a payload text and requires it to be exactly the
// contract's encoding (compact, keys sorted, no HTML escaping).
func canonical(t *testing.T, text string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("payload %q is not JSON: %v", text, err)
	}
	want, err := contracts.EncodePayload(v)
	if err != nil {
		t.Fatalf("re-encode payload %q: %v", text, err)
	}
	if text != want {
		t.Errorf("payload %q is not canonical JSON, want %q", text, want)
	}
	return v
}

// keys returns the sorted keys of a JSON object value.
func keys(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is %T, want a JSON object", v, v)
	}
	return slices.Sorted(maps.Keys(m))
}

// callResult calls tool through the session and returns the raw result
// (which must not be a JSON-RPC error).
func callResult(t *testing.T, ctx context.Context, c *conn, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	return res
}

// textOf returns the single text of a result.
func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	return onlyText(t, res.Content)
}
