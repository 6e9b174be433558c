package e2etest

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
	// TestTimeout bounds every MCP call and wait of one test.
	TestTimeout = 30 * time.Second
	// ExitTimeout bounds how long a server may take to exit after its stdin
	// closes (the drain timeout is 3s).
	ExitTimeout = 15 * time.Second
)

// Backends every store-dependent test runs on.
const (
	SQLite          = "sqlite"
	postgresBackend = "postgres"
)

// The token's environment variable, spelled out rather than imported: the
// tests check the contract, not tokenauth's idea of it.
const EnvToken = "OPENPROGRAM_MCP_TOKEN"

// Validator checks frames against the official MCP 2025-11-25 schema.
var Validator = func() *schemacheck.Validator {
	v, err := schemacheck.New()
	if err != nil {
		panic(fmt.Sprintf("load the MCP schema: %v", err))
	}
	return v
}()

// ForBackends runs fn as one parallel subtest per backend.
func ForBackends(t *testing.T, fn func(t *testing.T, backend string), backends ...string) {
	t.Helper()
	if len(backends) == 0 {
		backends = []string{SQLite, postgresBackend}
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}

// Ctx returns a context bounded by testTimeout that ends with the test.
func Ctx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), TestTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Eventually polls cond until it holds, and fails the test when it still
// does not after timeout. It polls every 10 ms at first, backing off to
// every 200 ms: a condition that holds soon is seen at once, and one that
// scans /proc does not load a busy machine while it waits.
func Eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for wait := 10 * time.Millisecond; !cond(); wait = min(2*wait, 200*time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still not after %s", what, timeout)
		}
		time.Sleep(wait)
	}
}

// Install is one fresh OpenProgram installation: its own state directory,
// HOME, token and store.
type Install struct {
	T        *testing.T
	Root     string // everything of the test lives below
	Home     string // OPENPROGRAM_HOME
	UserHome string // HOME
	Token    string // "" until created
	ClientID string // hex(sha256(token))[:16]
	backend  string
}

// NewInstall creates a state directory with a token (openprogram mcp token
// create) on backend. The state directory does not exist before.
func NewInstall(t *testing.T, backend string) *Install {
	t.Helper()
	in := NewBareInstall(t, backend)
	in.CreateToken()
	return in
}

// NewBareInstall is NewInstall without a token.
func NewBareInstall(t *testing.T, backend string) *Install {
	t.Helper()
	root := t.TempDir()
	in := &Install{
		T:        t,
		Root:     root,
		Home:     filepath.Join(root, "state"),
		UserHome: filepath.Join(root, "home"),
		backend:  backend,
	}
	if err := os.Mkdir(in.UserHome, 0o700); err != nil {
		t.Fatalf("create HOME: %v", err)
	}
	if backend == postgresBackend {
		u := pgtest.URL(t, "op_e2e")
		in.set("store.url", u)
	}
	return in
}

// CreateToken creates the install's token (openprogram mcp token create)
// and records it and its client id.
func (in *Install) CreateToken() {
	in.T.Helper()
	out := in.MustRun("mcp", "token", "create")
	in.Token = strings.TrimSuffix(out, "\n")
	in.ClientID = clientIDOf(in.Token)
}

// clientIDOf is the contract's client id: hex(sha256(token))[:16].
func clientIDOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])[:16]
}

// Env is the environment of every child process: nothing of the test
// runner's OpenProgram settings leaks in.
func (in *Install) Env(extra ...string) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + in.UserHome,
		"TMPDIR=" + os.TempDir(),
		"OPENPROGRAM_HOME=" + in.Home,
		// The race runtime sleeps 1s at exit by default.
		"GORACE=atexit_sleep_ms=0",
	}
	return append(env, extra...)
}

// Result is how one CLI run ended.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// Run runs the binary with args and the install's environment, stdin
// /dev/null, bounded by testTimeout.
func (in *Install) Run(args ...string) Result {
	in.T.Helper()
	return in.runEnv(in.Env(), args...)
}

func (in *Install) runEnv(env []string, args ...string) Result {
	in.T.Helper()
	return in.RunExe(BinPath, env, args...)
}

// RunExe runs exe (the binary, or a link to it) with env and args.
func (in *Install) RunExe(exe string, env []string, args ...string) Result {
	in.T.Helper()
	return in.RunWith(exe, env, nil, args...)
}

// RunWith runs exe with env, args and stdin (nil: /dev/null).
func (in *Install) RunWith(exe string, env []string, stdin io.Reader, args ...string) Result {
	in.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), TestTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = env
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		in.T.Fatalf("run openprogram %s: %v", strings.Join(args, " "), err)
	}
	CheckStderr(in.T, "openprogram "+strings.Join(args, " "), stderr.String())
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: cmd.ProcessState.ExitCode()}
}

// MustRun runs the binary and fails the test unless it exits 0.
func (in *Install) MustRun(args ...string) string {
	in.T.Helper()
	r := in.Run(args...)
	if r.Code != 0 {
		in.T.Fatalf("openprogram %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// set runs `openprogram config set key value`.
func (in *Install) set(key, value string) {
	in.T.Helper()
	in.MustRun("config", "set", key, value)
}

// SetJSON sets key to v encoded as JSON.
func (in *Install) SetJSON(key string, v any) {
	in.T.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		in.T.Fatalf("encode %s: %v", key, err)
	}
	in.set(key, string(data))
}

// Script makes the scripted model replay turns (each `mcp serve` process
// replays them from the first).
func (in *Install) Script(turns ...scripted.Turn) {
	in.T.Helper()
	data, err := json.Marshal(scripted.Script{Turns: turns})
	if err != nil {
		in.T.Fatalf("encode the script: %v", err)
	}
	path := filepath.Join(in.Root, "script.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		in.T.Fatalf("write the script: %v", err)
	}
	in.set("model.provider", "scripted")
	in.set("model.script", path)
}

// Say is a model reply without tool calls.
func Say(text string) scripted.Turn { return scripted.Turn{Text: text} }

// Slowly is a reply of n words streamed one word every delay.
func Slowly(n int, delay time.Duration) scripted.Turn {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	return scripted.Turn{Text: strings.Join(words, " "), DelayMS: int(delay / time.Millisecond)}
}

// Failing is a model call that fails (class auth: never retried).
func Failing() scripted.Turn {
	return scripted.Turn{Error: &scripted.Failure{Class: "auth", Message: "bad key"}}
}

// Calls is a reply that asks for tool calls.
func Calls(text string, cs ...scripted.ToolCall) scripted.Turn {
	return scripted.Turn{Text: text, ToolCalls: cs}
}

// ToolCall is one tool call of a scripted reply, its arguments args.
func ToolCall(name string, args map[string]any) scripted.ToolCall {
	if args == nil {
		args = map[string]any{}
	}
	data, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return scripted.ToolCall{Name: name, Arguments: data}
}

// AuditRecord is one line of `openprogram audit tail --json`.
type AuditRecord struct {
	ID        int64           `json:"id"`
	TS        string          `json:"ts"`
	Type      string          `json:"type"`
	Origin    string          `json:"origin"`
	SessionID string          `json:"session_id"`
	Payload   json.RawMessage `json:"payload"`
	Hash      string          `json:"hash"`
}

// PayloadMap decodes the record's payload (numbers as json.Number).
func (r AuditRecord) PayloadMap(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.Payload))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("audit record %d payload %s: %v", r.ID, r.Payload, err)
	}
	return m
}

// Audit returns every audit record, oldest first, read with the CLI.
func (in *Install) Audit() []AuditRecord {
	in.T.Helper()
	out := in.MustRun("audit", "tail", "--json", "-n", "10000")
	var recs []AuditRecord
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var r AuditRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			in.T.Fatalf("audit tail --json line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// AuditOf returns the records of type typ.
func AuditOf(recs []AuditRecord, typ string) []AuditRecord {
	var out []AuditRecord
	for _, r := range recs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// VerifyAudit runs `openprogram audit verify` and requires an intact chain.
func (in *Install) VerifyAudit() {
	in.T.Helper()
	out := in.MustRun("audit", "verify")
	if !strings.HasPrefix(out, "audit log intact: ") {
		in.T.Errorf("audit verify = %q, want it to report an intact log", out)
	}
}

// MemorySources returns memory_status's source count, read with tool_call.
func MemorySources(t *testing.T, ctx context.Context, c *contracts.Client) float64 {
	t.Helper()
	content, err := c.ToolCall(ctx, "memory_status", nil)
	if err != nil {
		t.Fatalf("tool_call memory_status: %v", err)
	}
	var st struct {
		Sources *float64 `json:"sources"`
	}
	if err := json.Unmarshal([]byte(OnlyText(t, content)), &st); err != nil || st.Sources == nil {
		t.Fatalf("memory_status = %s, want {sources,...}: %v", OnlyText(t, content), err)
	}
	return *st.Sources
}

// OnlyText returns the text of content that is exactly one TextContent.
func OnlyText(t *testing.T, content []mcp.Content) string {
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

// CheckStderr fails the test on a data race or a panic reported by a child.
func CheckStderr(t *testing.T, what, stderr string) {
	t.Helper()
	for _, bad := range []*regexp.Regexp{dataRace, panicked, stackTrace} {
		if bad.MatchString(stderr) {
			t.Errorf("%s: stderr matches %s:\n%s", what, bad, stderr)
			return
		}
	}
}

// LineLog collects a byte stream as lines and lets tests wait for content.
type LineLog struct {
	mu      sync.Mutex
	lines   [][]byte
	partial []byte
	eof     bool
	changed chan struct{}
}

// NewLineLog returns an empty log.
func NewLineLog() *LineLog { return &LineLog{changed: make(chan struct{})} }

// Add appends p to the stream; every line it completes is logged.
func (l *LineLog) Add(p []byte) {
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

// End marks the end of the stream.
func (l *LineLog) End() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.eof {
		l.eof = true
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// Snapshot returns the complete lines, the unterminated rest, whether the
// stream ended, and a channel closed at the next change.
func (l *LineLog) Snapshot() (lines [][]byte, partial []byte, eof bool, changed <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines), bytes.Clone(l.partial), l.eof, l.changed
}

// Frames returns the complete lines parsed as JSON objects; lines that are
// not are skipped here (conn.check reports them).
func (l *LineLog) Frames() []Frame {
	lines, _, _, _ := l.Snapshot()
	out := make([]Frame, 0, len(lines))
	for i, line := range lines {
		if f, err := ParseFrame(line); err == nil {
			f.Index = i
			out = append(out, f)
		}
	}
	return out
}

// WaitFor waits until pred holds for the log's frames and returns them.
func (l *LineLog) WaitFor(t *testing.T, what string, timeout time.Duration, pred func([]Frame) bool) []Frame {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		_, _, eof, changed := l.Snapshot()
		fs := l.Frames()
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

// Frame is one JSON-RPC line.
type Frame struct {
	Index   int
	Raw     []byte
	Members map[string]json.RawMessage
}

// ParseFrame parses one line as a JSON object.
func ParseFrame(line []byte) (Frame, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return Frame{}, err
	}
	if m == nil {
		return Frame{}, errors.New("null")
	}
	return Frame{Raw: bytes.Clone(line), Members: m}, nil
}

// Method is the frame's method, "" for a response.
func (f Frame) Method() string {
	var s string
	_ = json.Unmarshal(f.Members["method"], &s)
	return s
}

// ID is the frame's id as compact JSON, "" when it has none.
func (f Frame) ID() string {
	raw, ok := f.Members["id"]
	if !ok {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// IsResponse reports whether the frame is a response (an id, no method).
func (f Frame) IsResponse() bool {
	_, hasMethod := f.Members["method"]
	return !hasMethod && f.ID() != ""
}

// Param decodes params.<key> into v and reports whether it was there.
func (f Frame) Param(key string, v any) bool {
	var params map[string]json.RawMessage
	if json.Unmarshal(f.Members["params"], &params) != nil {
		return false
	}
	raw, ok := params[key]
	if !ok {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// ProgressToken returns the compact JSON of the frame's
// params._meta.progressToken, "" without one.
func (f Frame) ProgressToken() string {
	var meta map[string]json.RawMessage
	if !f.Param("_meta", &meta) {
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

// Progress is one notifications/progress.
type Progress struct {
	Index    int // line number on stdout
	Token    string
	Progress float64
	Message  string
}

// ProgressOf returns the notifications/progress among fs, in order.
func ProgressOf(fs []Frame) []Progress {
	var out []Progress
	for _, f := range fs {
		if f.Method() != "notifications/progress" {
			continue
		}
		p := Progress{Index: f.Index}
		var tok json.RawMessage
		f.Param("progressToken", &tok)
		var b bytes.Buffer
		if json.Compact(&b, tok) == nil {
			p.Token = b.String()
		}
		f.Param("progress", &p.Progress)
		f.Param("message", &p.Message)
		out = append(out, p)
	}
	return out
}

// ResponseTo returns the response to the request with id.
func ResponseTo(fs []Frame, id string) (Frame, bool) {
	for _, f := range fs {
		if f.IsResponse() && f.ID() == id {
			return f, true
		}
	}
	return Frame{}, false
}

// tapReader records what it reads into a lineLog.
type tapReader struct {
	r   io.Reader
	log *LineLog
}

func (tr *tapReader) Read(p []byte) (int, error) {
	n, err := tr.r.Read(p)
	if n > 0 {
		tr.log.Add(p[:n])
	}
	if err != nil {
		tr.log.End()
	}
	return n, err
}

// Close does nothing: the client ends the session by closing stdin, and the
// harness closes stdout once the server has exited (as CommandTransport does).
func (tr *tapReader) Close() error { return nil }

// tapWriter records what it writes into a lineLog; Close closes once.
type tapWriter struct {
	w    io.WriteCloser
	log  *LineLog
	once sync.Once
	err  error
}

// Write logs p before it writes it: once the server has read a request
// (and perhaps answered it or reported progress for it), the request is in
// the log, so a test never looks it up too early.
func (tw *tapWriter) Write(p []byte) (int, error) {
	tw.log.Add(p)
	return tw.w.Write(p)
}

func (tw *tapWriter) Close() error {
	tw.once.Do(func() {
		tw.err = tw.w.Close()
		tw.log.End()
	})
	return tw.err
}

// LockedBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ConnOptions configure one `mcp serve` connection.
type ConnOptions struct {
	ClientName, ClientVersion string
	// ProtocolVersion is the version the client asks for; "" lets go-sdk
	// choose (it then tries server/discover first).
	ProtocolVersion string
	// Env is more of the server's environment (NAME=value).
	Env []string
}

// Conn is one running `openprogram mcp serve` with a go-sdk client session
// over its stdin and stdout. Everything the server writes is recorded (out)
// and checked when the connection closes: every line a JSON-RPC message
// valid under the MCP schema, the exit status, no race or panic on stderr.
type Conn struct {
	t        *testing.T
	in       *Install
	Cmd      *exec.Cmd
	Session  *mcp.ClientSession
	Client   *contracts.Client
	Out      *LineLog // server -> client, raw
	Sent     *LineLog // client -> server, raw
	Stdin    *tapWriter
	Stdout   *os.File
	Stderr   *LockedBuffer
	exited   chan struct{}
	WantExit int

	mu         sync.Mutex
	violations []string
	closeOnce  sync.Once
}

// Serve starts `openprogram mcp serve` with the install's token and
// connects a go-sdk client to it. The connection is closed (stdin first)
// and checked when the test ends, unless the test closes it earlier.
func (in *Install) Serve(opts *ConnOptions) *Conn {
	in.T.Helper()
	o := ConnOptions{ClientName: "openprogram-e2e", ClientVersion: "1.0.0", ProtocolVersion: contracts.ProtocolVersion}
	if opts != nil {
		o = *opts
	}
	c := in.Start(append([]string{EnvToken + "=" + in.Token}, o.Env...)...)
	client := mcp.NewClient(&mcp.Implementation{Name: o.ClientName, Version: o.ClientVersion},
		&mcp.ClientOptions{ProgressNotificationHandler: contracts.HandleProgress})
	transport := schemacheck.Wrap(&mcp.IOTransport{Reader: &tapReader{r: c.Stdout, log: c.Out}, Writer: c.Stdin}, Validator, c.report)
	ctx, cancel := context.WithTimeout(context.Background(), TestTimeout)
	defer cancel()
	var sopts *mcp.ClientSessionOptions
	if o.ProtocolVersion != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion}
	}
	cs, err := client.Connect(ctx, transport, sopts)
	if err != nil {
		in.T.Fatalf("connect to openprogram mcp serve: %v\nstderr:\n%s", err, c.Stderr)
	}
	c.Session = cs
	c.Client = contracts.NewClient(cs)
	return c
}

// Start starts `openprogram mcp serve` with extraEnv over fresh pipes; the
// caller connects a client to c.stdout and c.stdin.
func (in *Install) Start(extraEnv ...string) *Conn {
	in.T.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		in.T.Fatalf("stdin pipe: %v", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		in.T.Fatalf("stdout pipe: %v", err)
	}
	c := &Conn{
		t: in.T, in: in,
		Out: NewLineLog(), Sent: NewLineLog(),
		Stdout: outR, Stderr: &LockedBuffer{},
		exited: make(chan struct{}),
	}
	c.Stdin = &tapWriter{w: inW, log: c.Sent}
	c.Cmd = exec.Command(BinPath, "mcp", "serve")
	c.Cmd.Env = in.Env(extraEnv...)
	c.Cmd.Stdin, c.Cmd.Stdout, c.Cmd.Stderr = inR, outW, c.Stderr
	err = c.Cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		in.T.Fatalf("start openprogram mcp serve: %v", err)
	}
	go func() {
		_ = c.Cmd.Wait()
		close(c.exited)
	}()
	in.T.Cleanup(c.Close)
	return c
}

func (c *Conn) report(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violations = append(c.violations, err.Error())
}

// CloseStdin ends the server's input (EOF) without closing the client.
func (c *Conn) CloseStdin() { _ = c.Stdin.Close() }

// WaitExit waits for the server to exit and returns its exit code. After
// timeout it kills it and fails the test.
func (c *Conn) WaitExit(timeout time.Duration) int {
	c.t.Helper()
	select {
	case <-c.exited:
	case <-time.After(timeout):
		c.t.Errorf("openprogram mcp serve did not exit within %s of its stdin closing; killing it\nstderr:\n%s", timeout, c.Stderr)
		_ = c.Cmd.Process.Kill()
		<-c.exited
	}
	return c.Cmd.ProcessState.ExitCode()
}

// Close closes the client session (which closes the server's stdin), waits
// for the server to exit and checks the whole conversation.
func (c *Conn) Close() {
	c.closeOnce.Do(func() {
		t := c.t
		var closed chan struct{}
		if c.Session != nil {
			closed = make(chan struct{})
			go func() {
				_ = c.Session.Close()
				close(closed)
			}()
		} else {
			c.CloseStdin()
		}
		code := c.WaitExit(ExitTimeout)
		if closed != nil {
			select {
			case <-closed:
			case <-time.After(ExitTimeout):
				t.Errorf("the client session did not close after the server exited")
			}
		}
		c.Stdout.Close()
		if code != c.WantExit {
			t.Errorf("openprogram mcp serve exit status = %d, want %d\nstderr:\n%s", code, c.WantExit, c.Stderr)
		}
		CheckStderr(t, "openprogram mcp serve", c.Stderr.String())
		c.check()
	})
}

// check requires every line the server wrote to stdout to be a JSON-RPC 2.0
// Message valid under the MCP 2025-11-25 schema (responses against the
// Result type of the request they answer), and no schema violation seen by
// the client's transport.
func (c *Conn) check() {
	t := c.t
	t.Helper()
	c.mu.Lock()
	violations := slices.Clone(c.violations)
	c.mu.Unlock()
	for _, v := range violations {
		t.Errorf("schema violation in a frame the client read: %s", v)
	}
	methods := map[string]string{}
	for _, f := range c.Sent.Frames() {
		if m := f.Method(); m != "" && f.ID() != "" {
			methods[f.ID()] = m
		}
	}
	lines, partial, _, _ := c.Out.Snapshot()
	if len(partial) > 0 {
		t.Errorf("stdout ends with an unterminated line %q", partial)
	}
	for i, line := range lines {
		f, err := ParseFrame(line)
		if err != nil {
			t.Errorf("stdout line %d is not a JSON object: %q", i, line)
			continue
		}
		if string(f.Members["jsonrpc"]) != `"2.0"` {
			t.Errorf("stdout line %d has jsonrpc %s, want \"2.0\": %s", i, f.Members["jsonrpc"], line)
		}
		// An error whose id cannot be echoed has no "id" member (the
		// schema check below refuses "id": null); go-sdk's decoder wants an
		// ID on every response, so those are left to the schema check.
		_, hasID := f.Members["id"]
		_, isError := f.Members["error"]
		if hasID || !isError {
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				t.Errorf("stdout line %d is not a JSON-RPC message: %v: %s", i, err, line)
			}
		}
		method := ""
		if f.IsResponse() {
			method = methods[f.ID()]
		}
		if err := Validator.ServerFrame(line, method); err != nil {
			t.Errorf("stdout line %d: %v", i, err)
		}
	}
}

// callsTo returns the tools/call requests the client sent for tool, in order.
func (c *Conn) callsTo(tool string) []Frame {
	var out []Frame
	for _, f := range c.Sent.Frames() {
		var name string
		if f.Method() == "tools/call" && f.Param("name", &name) && name == tool {
			out = append(out, f)
		}
	}
	return out
}

// LastCallTo returns the last tools/call request for tool.
func (c *Conn) LastCallTo(tool string) Frame {
	c.t.Helper()
	fs := c.callsTo(tool)
	if len(fs) == 0 {
		c.t.Fatalf("the client sent no tools/call for %s", tool)
	}
	return fs[len(fs)-1]
}

// ProgressFor returns the progress notifications on stdout that carry the
// Progress token of request req.
func (c *Conn) ProgressFor(req Frame) []Progress {
	tok := req.ProgressToken()
	if tok == "" {
		return nil
	}
	var out []Progress
	for _, p := range ProgressOf(c.Out.Frames()) {
		if p.Token == tok {
			out = append(out, p)
		}
	}
	return out
}

// WaitSent waits until the client has written a tools/call for tool (n-th,
// counting from 1) and returns it.
func (c *Conn) WaitSent(tool string, n int) Frame {
	c.t.Helper()
	c.Sent.WaitFor(c.t, fmt.Sprintf("tools/call %s #%d to be sent", tool, n), TestTimeout, func([]Frame) bool {
		return len(c.callsTo(tool)) >= n
	})
	return c.callsTo(tool)[n-1]
}

// WaitResponse waits for the server's response to the request id.
func (c *Conn) WaitResponse(id string) Frame {
	c.t.Helper()
	fs := c.Out.WaitFor(c.t, "the response to request "+id, TestTimeout, func(fs []Frame) bool {
		_, ok := ResponseTo(fs, id)
		return ok
	})
	f, _ := ResponseTo(fs, id)
	return f
}

// ErrorObject returns the raw "error" member of a response.
func ErrorObject(t *testing.T, f Frame) json.RawMessage {
	t.Helper()
	raw, ok := f.Members["error"]
	if !ok {
		t.Fatalf("response %s has no error: %s", f.ID(), f.Raw)
	}
	return raw
}

// RPCError calls tool with args directly through the session and returns
// the JSON-RPC error it must fail with.
func RPCError(t *testing.T, ctx context.Context, c *Conn, tool string, args any) *jsonrpc.Error {
	t.Helper()
	res, err := c.Session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err == nil {
		t.Fatalf("tools/call %s %v = result %+v, want a JSON-RPC error", tool, args, res)
	}
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("tools/call %s %v error = %v (%T), want a JSON-RPC error", tool, args, err, err)
	}
	return werr
}

// Canonical decodes a payload text and requires it to be exactly the
// contract's encoding (compact, keys sorted, no HTML escaping).
func Canonical(t *testing.T, text string) any {
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

// Keys returns the sorted keys of a JSON object value.
func Keys(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v is %T, want a JSON object", v, v)
	}
	return slices.Sorted(maps.Keys(m))
}

// CallResult calls tool through the session and returns the raw result
// (which must not be a JSON-RPC error).
func CallResult(t *testing.T, ctx context.Context, c *Conn, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.Session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	return res
}

// TextOf returns the single text of a result.
func TextOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	return OnlyText(t, res.Content)
}
