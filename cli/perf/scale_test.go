//go:build linux

package perf

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
	"github.com/openprogram/openprogram/tokenauth"
)

// The scale harness (TestScale) starts N real `openprogram mcp serve`
// processes on one PostgreSQL database, all at once, each sending
// scalePrompts prompt_send at once to the scripted model, and reports
// processes started, prompts ok and failed, p50/p99 prompt latency, the
// peak of server connections and the connections still held once the
// servers have been idle for -scale.idle. Each scenario runs as a role of
// its own (pgtest.Role), so its connections are counted apart from anything
// else on the server: "direct" connects straight to the server, the role
// limited to -scale.limit connections (a stand-in for max_connections),
// and "pgbouncer" goes through a PgBouncer in transaction pooling that the
// harness starts on a free loopback port (pgtest.PgBouncer).
//
// Under `go test ./...` (CI) it runs small: 30 servers direct with a limit
// of 20 connections and 30 through PgBouncer, and fails on any failed
// prompt or any connection held after the idle wait. `make bench-scale`
// runs the full sizes against $OPENPROGRAM_SCALE_DATABASE_URL (a server of
// your own: the load is real):
//
//	go test -run '^TestScale$' -v -timeout 60m ./perf/ -args \
//	  -scale.direct 40,60,100 -scale.limit -1 -scale.bouncer 200,300 -scale.idle 60s
//
// OPENPROGRAM_PERF_BINARY measures another build (e.g. an older one).
var (
	scaleDirect  = flag.String("scale.direct", "30", "comma-separated server counts connecting directly")
	scaleBouncer = flag.String("scale.bouncer", "30", "comma-separated server counts connecting through PgBouncer")
	scaleLimit   = flag.Int("scale.limit", 20, "CONNECTION LIMIT of the direct scenario's role (-1: only the server's max_connections)")
	scaleIdle    = flag.Duration("scale.idle", 45*time.Second, "how long the servers stay idle before the held connections are counted (polled: the wait ends early once none is held)")
	scaleStrict  = flag.Bool("scale.strict", true, "fail on failed prompts or connections held after the idle wait")
	scaleOne     = flag.Bool("scale.onestate", false, "every server of a scenario shares one state directory (one host), instead of one each")
)

const (
	scalePrompts = 5
	// scaleDeadline bounds one scenario from the first start to the last
	// answer; a prompt not answered by then counts as failed.
	scaleDeadline = 3 * time.Minute
)

// scaleURLEnv names the server of `make bench-scale`; without it the
// harness uses the test server.
const scaleURLEnv = "OPENPROGRAM_SCALE_DATABASE_URL"

func TestScale(t *testing.T) {
	base := os.Getenv(scaleURLEnv)
	if base == "" {
		base = pgtest.BaseURL(t)
	}
	bin := binary(t)
	for _, sc := range []struct {
		name   string
		counts string
	}{{"direct", *scaleDirect}, {"pgbouncer", *scaleBouncer}} {
		for _, f := range strings.Split(sc.counts, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 || n > 1000 {
				t.Fatalf("-scale.%s %q: want server counts from 0 to 1000", sc.name, sc.counts)
			}
			if n == 0 {
				continue
			}
			t.Run(fmt.Sprintf("%s/N=%d", sc.name, n), func(t *testing.T) {
				r := runScale(t, bin, base, sc.name == "pgbouncer", n)
				t.Logf("%s N=%d: started %d/%d, prompts ok %d failed %d, p50 %.1f ms p99 %.1f ms, peak server connections %d, held after %v idle %d",
					sc.name, n, r.started, n, r.ok, r.failed, r.p50ms, r.p99ms, r.peak, r.idleWaited.Round(time.Second), r.held)
				for _, e := range r.errors {
					t.Logf("  %s", e)
				}
				for _, v := range r.verified {
					t.Logf("  audit verify on %s", v)
				}
				if *scaleStrict && (r.started != n || r.failed > 0 || r.held > 0 || r.broken) {
					t.Errorf("%s N=%d: %d of %d started, %d prompts failed, %d connections held after the idle wait; want all started, 0, 0",
						sc.name, n, r.started, n, r.failed, r.held)
				}
			})
		}
	}
}

type scaleResult struct {
	started, ok, failed int
	p50ms, p99ms        float64
	peak, held          int
	idleWaited          time.Duration
	errors              []string // the first few distinct failures
	verified            []string // audit verify's answer on two of the state directories
	broken              bool     // one of them was not intact
}

func runScale(t *testing.T, bin, base string, bounced bool, n int) scaleResult {
	limit := *scaleLimit
	if bounced {
		limit = -1
	}
	roleURL := pgtest.Role(t, base, "op_scale", limit)
	cfg, err := pgconn.ParseConfig(roleURL)
	if err != nil {
		t.Fatal(err)
	}
	role := cfg.User
	serverURL := roleURL
	var bouncer *pgtest.Bouncer
	if bounced {
		bouncer = pgtest.PgBouncer(t, base, &pgtest.BouncerOptions{PoolSize: 20, MaxClients: 4 * n, Users: []string{role}})
		serverURL = pgtest.WithUser(bouncer.URL, role)
	}
	// Migrate once up front, as an upgrade would, so the measurement is
	// the servers' work and not n migrations queueing on one lock.
	mctx, mcancel := context.WithTimeout(t.Context(), time.Minute)
	keyFile, first, err := migrateOnce(mctx, t, bin, serverURL)
	if err != nil {
		mcancel()
		t.Fatalf("migrate the scale schema: %v", err)
	}
	mcancel()

	ctx, cancel := context.WithTimeout(t.Context(), scaleDeadline+*scaleIdle+time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	count := func() (int, error) {
		var c int
		err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE usename = $1", role).Scan(&c)
		return c, err
	}
	var peak atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if c, err := count(); err == nil && int64(c) > peak.Load() {
				peak.Store(int64(c))
			}
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
		}
	}()

	script := `{"turns": [` + strings.TrimSuffix(strings.Repeat(`{"text": "scaled"},`, scalePrompts), ",") + `]}`
	root := t.TempDir()
	var (
		mu        sync.Mutex
		latencies []float64
		res       scaleResult
		seen      = map[string]bool{}
		wg        sync.WaitGroup
		idle      = make(chan struct{}) // closed once the counting after the idle wait is done
	)
	fail := func(why string) {
		mu.Lock()
		defer mu.Unlock()
		res.failed++
		if k := firstLineOf(why); !seen[k] && len(seen) < 5 {
			seen[k] = true
			res.errors = append(res.errors, k)
		}
	}
	deadline := time.Now().Add(scaleDeadline)
	answered := make(chan struct{}, n)
	verifyOn := []*state{first}
	var one *state
	for i := range n {
		var st *state
		switch {
		case *scaleOne && one != nil:
			st = one
		default:
			st = newState(t, filepath.Join(root, strconv.Itoa(i)), script)
			if err := shareKey(keyFile, st.dir); err != nil {
				t.Fatalf("share the audit key: %v", err)
			}
			one = st
		}
		if i == n-1 {
			verifyOn = append(verifyOn, st)
		}
		wg.Go(func() {
			p, err := startServer(bin, st, serverURL)
			if err != nil {
				for range scalePrompts {
					fail(err.Error())
				}
				answered <- struct{}{}
				return
			}
			defer p.stop()
			mu.Lock()
			res.started++
			mu.Unlock()
			lat, errs := p.prompts(deadline)
			mu.Lock()
			latencies = append(latencies, lat...)
			res.ok += len(lat)
			mu.Unlock()
			for _, e := range errs {
				fail(e + " | stderr: " + st.logTail())
			}
			answered <- struct{}{}
			// Stay connected and idle until the idle count is taken.
			select {
			case <-idle:
			case <-ctx.Done():
			}
		})
	}
	for range n {
		<-answered
	}
	close(stopSampling)
	<-sampled
	idleStart := time.Now()
	held := func() (int, error) {
		if bounced {
			return bouncer.Clients(ctx, role)
		}
		return count()
	}
	for {
		h, err := held()
		if err != nil {
			t.Errorf("count the held connections: %v", err)
		}
		res.held = h
		if h == 0 || time.Since(idleStart) >= *scaleIdle {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	res.idleWaited = time.Since(idleStart)
	close(idle)
	wg.Wait()
	res.peak = int(peak.Load())
	res.p50ms, res.p99ms = quantile(latencies, 0.5), quantile(latencies, 0.99)
	// Two state directories (the one that migrated and the last server's)
	// each verify the whole log the run wrote.
	for _, st := range verifyOn {
		cmd := exec.CommandContext(ctx, bin, "audit", "verify")
		cmd.Env = append(st.env(), "OPENPROGRAM_DATABASE_URL="+serverURL)
		out, err := cmd.CombinedOutput()
		if err != nil {
			res.broken = true
		}
		res.verified = append(res.verified, filepath.Base(st.dir)+": "+firstLineOf(lastLine(string(out))))
	}
	return res
}

// lastLine is the last non-empty line of s (audit verify's verdict after
// its notes).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// migrateOnce runs `openprogram mcp serve` once against url with stdin
// closed at once: it opens (and so migrates) the store, creates the audit
// key and keys the empty log. It returns the key file's path and the state
// directory: every server of the harness gets a copy of the key, as every
// host sharing one database needed before writer chains (a build with
// writer chains does not use it).
func migrateOnce(ctx context.Context, t *testing.T, bin, url string) (string, *state, error) {
	st := newState(t, filepath.Join(t.TempDir(), "migrate"), tinyScript)
	cmd := exec.CommandContext(ctx, bin, "mcp", "serve")
	cmd.Env = append(st.env(), "OPENPROGRAM_DATABASE_URL="+url)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", nil, fmt.Errorf("%w: %s", err, out)
	}
	return tokenauth.KeyPath(st.dir), st, nil
}

// shareKey copies the audit key file at from into the state directory dir.
func shareKey(from, dir string) error {
	key, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(tokenauth.KeyPath(dir), key, 0o600)
}

// scaleProc is one server of the harness.
type scaleProc struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	outF   *os.File
	exited chan struct{}
}

func startServer(bin string, st *state, url string) (*scaleProc, error) {
	logf, err := os.OpenFile(st.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(bin, "mcp", "serve")
	cmd.Env = append(st.env(), "OPENPROGRAM_DATABASE_URL="+url)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, logf
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start openprogram mcp serve: %w", err)
	}
	p := &scaleProc{cmd: cmd, in: inW, out: bufio.NewReaderSize(outR, 64<<10), outF: outR, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// prompts performs the handshake, sends scalePrompts prompt_send at once
// and returns the latencies of the successful ones and why the others
// failed.
func (p *scaleProc) prompts(deadline time.Time) (lat []float64, errs []string) {
	failAll := func(why string) ([]float64, []string) {
		for range scalePrompts - len(lat) {
			errs = append(errs, why)
		}
		return lat, errs
	}
	if err := p.outF.SetReadDeadline(deadline); err != nil {
		return failAll(err.Error())
	}
	if _, err := p.in.Write(initializeLine); err != nil {
		return failAll("write initialize: " + err.Error())
	}
	if m, err := p.next(); err != nil || m.Error != nil {
		return failAll(fmt.Sprintf("initialize: %v %+v", err, m.Error))
	}
	var batch strings.Builder
	batch.Write(initializedLine)
	for i := range scalePrompts {
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"scale %d"}}}`+"\n", 100+i, i)
	}
	sent := time.Now()
	if _, err := io.WriteString(p.in, batch.String()); err != nil {
		return failAll("write prompt_send: " + err.Error())
	}
	for range scalePrompts {
		m, err := p.next()
		if err != nil {
			return failAll("read prompt_send: " + err.Error())
		}
		if why := promptFailure(m); why != "" {
			errs = append(errs, why)
			continue
		}
		lat = append(lat, float64(time.Since(sent).Microseconds())/1000)
	}
	return lat, errs
}

// next reads the next response, skipping notifications.
func (p *scaleProc) next() (message, error) {
	for {
		line, err := p.out.ReadBytes('\n')
		if err != nil {
			return message{}, err
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			return message{}, fmt.Errorf("decode %q: %w", line, err)
		}
		if m.Method == "" {
			return m, nil
		}
	}
}

// promptFailure says why a prompt_send response is not a completed turn,
// or "".
func promptFailure(m message) string {
	if m.Error != nil {
		return fmt.Sprintf("error %d: %s", m.Error.Code, m.Error.Message)
	}
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) == 0 {
		return fmt.Sprintf("not a tool result: %s", m.Result)
	}
	var payload struct {
		Failed bool `json:"failed"`
	}
	if res.IsError || json.Unmarshal([]byte(res.Content[0].Text), &payload) != nil || payload.Failed {
		return res.Content[0].Text
	}
	return ""
}

// stop closes stdin and waits for the exit (killed after exitTimeout).
func (p *scaleProc) stop() {
	p.in.Close()
	select {
	case <-p.exited:
	case <-time.After(exitTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	p.outF.Close()
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}
