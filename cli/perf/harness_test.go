//go:build linux

package perf

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/tokenauth"
)

// Timeouts bound every wait so that a broken server fails a benchmark
// instead of hanging it.
const (
	buildTimeout = 5 * time.Minute
	lineTimeout  = 10 * time.Second
	exitTimeout  = 10 * time.Second
)

func TestMain(m *testing.M) {
	code := m.Run()
	removeShared()
	os.Exit(code)
}

// shared is what lives for the whole test binary run, so that -count=N
// builds the binary and seeds the template store once. TestMain removes it.
var shared struct {
	mu  sync.Mutex
	dir string // created on first use

	buildOnce sync.Once
	bin       string
	buildErr  error

	floorOnce sync.Once
	floor     string
	floorErr  error
}

func sharedDir(tb testing.TB) string {
	tb.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dir == "" {
		d, err := os.MkdirTemp("", "openprogram-perf-")
		if err != nil {
			tb.Fatalf("create the shared benchmark directory: %v", err)
		}
		shared.dir = d
	}
	return shared.dir
}

func removeShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}

// binEnv names a prebuilt openprogram binary to benchmark instead of
// building one (for example an unstripped build, to profile it with perf).
const binEnv = "OPENPROGRAM_PERF_BINARY"

// binary builds ./cmd/openprogram once, the way `make build` does (with
// $OPENPROGRAM_PERF_BINARY set it takes that binary instead), installs a
// copy evicted from the page cache and returns the copy's path.
func binary(tb testing.TB) string {
	tb.Helper()
	dir := sharedDir(tb)
	shared.buildOnce.Do(func() {
		built := filepath.Join(dir, "openprogram.build")
		if bin := os.Getenv(binEnv); bin != "" {
			// A given binary is installed the same way: where it lies, its
			// pages may sit in the page cache in any state.
			built = bin
		} else if err := goBuild(built, "./cmd/openprogram"); err != nil {
			shared.buildErr = err
			return
		}
		// Install a copy, as `install -m 0755` would, and drop it from
		// the page cache so that the first start reads it from disk, as
		// after a reboot. The server's file-backed RSS depends on how the
		// binary's pages sit in the page cache (large folios are mapped
		// whole): for the same bytes it was ~25 MiB after a read from
		// disk, ~27 MiB as the linker wrote it, ~44 MiB after one large
		// write(2).
		out := filepath.Join(dir, "openprogram")
		if err := installCopy(built, out); err != nil {
			shared.buildErr = err
			return
		}
		if built != os.Getenv(binEnv) {
			os.Remove(built)
		}
		shared.bin = out
	})
	if shared.buildErr != nil {
		tb.Fatal(shared.buildErr)
	}
	return shared.bin
}

// goBuild builds the cli module's package pkg into out the way `make build`
// builds the release binary: static (no cgo), -trimpath, stripped.
func goBuild(out, pkg string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("find the go command: %w", err)
	}
	cmd := exec.Command(gobin, "build", "-trimpath", "-ldflags", "-s -w -X main.version=perf", "-o", out, pkg)
	cmd.Dir = ".." // the cli module root
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	timer := time.AfterFunc(buildTimeout, func() { _ = cmd.Process.Kill() })
	err = cmd.Wait()
	timer.Stop()
	if err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, stderr.String())
	}
	return nil
}

// state is a fresh state directory with a token, an owner principal and a
// config that selects the scripted model.
type state struct {
	dir   string
	token string
	log   string   // the servers' stderr, appended
	extra []string // more of the servers' environment (KEY=value)
}

// tinyScript is the model script of benchmarks that never prompt.
const tinyScript = `{"turns": [{"text": "hello"}]}`

// newState makes a state directory in dir (created 0700) with a token,
// owner.json and config.json (scripted model replaying script).
func newState(tb testing.TB, dir, script string) *state {
	tb.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		tb.Fatalf("create the state directory: %v", err)
	}
	token, err := tokenauth.Create(tokenauth.Path(dir))
	if err != nil {
		tb.Fatalf("create the token: %v", err)
	}
	if _, err := authz.LoadOrCreateOwnerPrincipal(dir); err != nil {
		tb.Fatalf("create the owner principal: %v", err)
	}
	scriptPath := filepath.Join(dir, "script.json")
	if err := os.WriteFile(scriptPath, []byte(script), 0o600); err != nil {
		tb.Fatalf("write the model script: %v", err)
	}
	cfg, err := json.Marshal(map[string]any{"model": map[string]any{"provider": "scripted", "script": scriptPath}})
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		tb.Fatalf("write config.json: %v", err)
	}
	return &state{dir: dir, token: token, log: filepath.Join(dir, "serve.log")}
}

// env is the whole environment of a server: nothing inherited but PATH, so
// that no OPENPROGRAM_DATABASE_URL or the like leaks in.
func (s *state) env() []string {
	return append([]string{
		"OPENPROGRAM_HOME=" + s.dir,
		tokenauth.EnvVar + "=" + s.token,
		"HOME=" + s.dir,
		"PATH=" + os.Getenv("PATH"),
	}, s.extra...)
}

// serveCmd returns an unstarted `openprogram mcp serve` for s, its stderr
// appended to s.log.
func (s *state) serveCmd(tb testing.TB, bin string) (*exec.Cmd, *os.File) {
	tb.Helper()
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		tb.Fatalf("open the server log: %v", err)
	}
	cmd := exec.Command(bin, "mcp", "serve")
	cmd.Env = s.env()
	cmd.Stderr = logf
	return cmd, logf
}

// logTail returns the end of the server log, for failure messages.
func (s *state) logTail() string {
	data, _ := os.ReadFile(s.log)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// rawProc is a server driven over raw pipes: no SDK on the client side.
type rawProc struct {
	st  *state
	cmd *exec.Cmd
	in  *os.File // the server's stdin
	out *os.File // the server's stdout
	r   *bufio.Reader

	exited  chan struct{} // closed once Wait returned
	waitErr error         // Wait's result, set before exited closes
}

// startRaw execs the server and writes first to its stdin right away. It
// returns the process and the time just before exec.
func startRaw(tb testing.TB, bin string, st *state, first []byte) (*rawProc, time.Time) {
	tb.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd, logf := st.serveCmd(tb, bin)
	cmd.Stdin, cmd.Stdout = inR, outW
	p := &rawProc{st: st, cmd: cmd, in: inW, out: outR, r: bufio.NewReaderSize(outR, 64<<10), exited: make(chan struct{})}
	start := time.Now()
	err = cmd.Start()
	inR.Close()
	outW.Close()
	logf.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		tb.Fatalf("start openprogram mcp serve: %v", err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(p.kill)
	if len(first) > 0 {
		if _, err := p.in.Write(first); err != nil {
			p.kill()
			tb.Fatalf("write to the server: %v", err)
		}
	}
	return p, start
}

// send writes one line.
func (p *rawProc) send(tb testing.TB, line []byte) {
	tb.Helper()
	if _, err := p.in.Write(line); err != nil {
		tb.Fatalf("write to the server: %v\nserver log:\n%s", err, p.st.logTail())
	}
}

// message is a JSON-RPC message as far as the benchmarks look at it.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// readLine reads one line, waiting at most lineTimeout, and returns it with
// the time it was read.
func (p *rawProc) readLine(tb testing.TB) ([]byte, time.Time) {
	tb.Helper()
	line, at, err := p.tryReadLine()
	if err != nil {
		tb.Fatalf("%v\nserver log:\n%s", err, p.st.logTail())
	}
	return line, at
}

// tryReadLine is readLine for goroutines other than the benchmark's, which
// must not call FailNow.
func (p *rawProc) tryReadLine() ([]byte, time.Time, error) {
	if err := p.out.SetReadDeadline(time.Now().Add(lineTimeout)); err != nil {
		return nil, time.Time{}, err
	}
	line, err := p.r.ReadBytes('\n')
	at := time.Now()
	if err != nil {
		return nil, at, fmt.Errorf("read from the server: %w (got %q)", err, line)
	}
	return line, at, nil
}

// readMsg reads and decodes one message.
func (p *rawProc) readMsg(tb testing.TB) (message, time.Time) {
	tb.Helper()
	line, at := p.readLine(tb)
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		tb.Fatalf("decode a line from the server: %v: %q", err, line)
	}
	return m, at
}

// response reads until the response to id, skipping notifications, and
// returns it with the time its line was read.
func (p *rawProc) response(tb testing.TB, id string) (message, time.Time) {
	tb.Helper()
	for {
		m, at := p.readMsg(tb)
		if m.Method == "" && string(m.ID) == id {
			return m, at
		}
		if m.Method == "" {
			tb.Fatalf("unexpected response to id %s while waiting for %s", m.ID, id)
		}
	}
}

// wait waits for the process to exit, at most d; false if it did not.
func (p *rawProc) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// close ends the session the way a client should: stdin closed, then the
// exit awaited (killed after exitTimeout). It fails tb unless the server
// exited 0 by itself.
func (p *rawProc) close(tb testing.TB) {
	tb.Helper()
	p.in.Close()
	if !p.wait(exitTimeout) {
		p.kill()
		tb.Fatalf("the server did not exit within %v of stdin closing\nserver log:\n%s", exitTimeout, p.st.logTail())
	}
	p.out.Close()
	if p.waitErr != nil {
		tb.Fatalf("the server exited with %v\nserver log:\n%s", p.waitErr, p.st.logTail())
	}
}

// kill kills the process if it still runs and releases the pipes. It is
// registered as a cleanup of every rawProc.
func (p *rawProc) kill() {
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Kill()
		p.wait(exitTimeout)
	}
	p.in.Close()
	p.out.Close()
}

// Requests written by the raw benchmarks.
var (
	initializeLine  = []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"openprogram-perf","version":"1"}}}` + "\n")
	initializedLine = []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	toolsListLine   = []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
)

// checkInitialize fails tb unless m is a successful initialize response
// from openprogram.
func checkInitialize(tb testing.TB, m message) {
	tb.Helper()
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.ServerInfo.Name != "openprogram" || res.ProtocolVersion != "2025-11-25" {
		tb.Fatalf("not a successful initialize response: id=%s result=%s error=%+v", m.ID, m.Result, m.Error)
	}
}

// initialize performs the handshake on a started rawProc whose initialize
// request was already written.
func (p *rawProc) initialize(tb testing.TB) {
	tb.Helper()
	m, _ := p.response(tb, "1")
	checkInitialize(tb, m)
	p.send(tb, initializedLine)
}

// procStatus returns the fields of /proc/<pid>/status named in keys, in kB.
func procStatus(pid int, keys ...string) (map[string]int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.Lines(string(data)) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || !slices.Contains(keys, name) {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return nil, fmt.Errorf("/proc/%d/status: unexpected %s line %q", pid, name, line)
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/status: %s: %w", pid, name, err)
		}
		out[name] = v
	}
	for _, k := range keys {
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("/proc/%d/status has no %s", pid, k)
		}
	}
	return out, nil
}

// procCPU returns the CPU time pid has used so far: the sum over its
// threads of the on-CPU nanoseconds in /proc/<pid>/task/<tid>/schedstat
// (exact, unlike the 10 ms ticks of /proc/<pid>/stat; threads that already
// exited are not counted, which for a Go program is next to nothing).
func procCPU(pid int) (time.Duration, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var sum time.Duration
	for _, e := range ents {
		data, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread just exited
		}
		if err != nil {
			return 0, err
		}
		f := strings.Fields(string(data))
		if len(f) < 1 {
			return 0, fmt.Errorf("%s/%s/schedstat: empty", dir, e.Name())
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s/%s/schedstat: %w", dir, e.Name(), err)
		}
		sum += time.Duration(ns)
	}
	return sum, nil
}

// selfCPU returns the user+system CPU time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// samples collects per-operation measurements.
type samples []time.Duration

// quantile returns the nearest-rank q-quantile (0 < q <= 1) of s.
func quantile[T cmp.Ordered](s []T, q float64) T {
	if len(s) == 0 {
		var zero T
		return zero
	}
	c := slices.Clone(s)
	slices.Sort(c)
	i := int(math.Ceil(float64(len(c))*q)) - 1
	return c[max(0, min(i, len(c)-1))]
}

func (s samples) quantile(q float64) time.Duration { return quantile(s, q) }

func (s samples) mean() time.Duration {
	if len(s) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return sum / time.Duration(len(s))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// reportLatency reports ns/op as the mean of s (replacing the loop's wall
// time, which includes untimed setup and teardown) and p50-ms, plus p99-ms
// when withP99.
func reportLatency(b *testing.B, s samples, withP99 bool) {
	b.Helper()
	if len(s) == 0 {
		b.Fatal("no samples")
	}
	b.ReportMetric(float64(s.mean().Nanoseconds()), "ns/op")
	b.ReportMetric(ms(s.quantile(0.50)), "p50-ms")
	if withP99 {
		b.ReportMetric(ms(s.quantile(0.99)), "p99-ms")
	}
}

// loopLatency calls call warm times untimed, then once per benchmark
// iteration, and reports the calls' latency (reportLatency, with p99).
func loopLatency(b *testing.B, warm int, call func() time.Duration) {
	b.Helper()
	for range warm {
		call()
	}
	var s samples
	for b.Loop() {
		s = append(s, call())
	}
	reportLatency(b, s, true)
}

// installCopy copies the executable src to dst (mode 0755), syncs it and
// evicts it from the page cache.
func installCopy(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("install the benchmarked binary: %w", err)
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return fmt.Errorf("install the benchmarked binary: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync() // only clean pages can be dropped
	}
	if err == nil {
		err = dropPageCache(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("install the benchmarked binary: %w", err)
	}
	return nil
}

// copyFile copies src to dst (created 0600) if src exists.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o600)
}
