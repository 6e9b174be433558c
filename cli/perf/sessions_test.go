//go:build linux

package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/sessions"
	_ "github.com/openprogram/openprogram/sessions/sqlite" // registers sqlite:
)

// seededSessions is how many sessions BenchmarkSessionsList's store holds.
const seededSessions = 10_000

// seededEpoch is the updated_at of the newest seeded session; each older
// one is a second earlier.
var seededEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var seeded struct {
	once sync.Once
	db   string // the template database, closed
	took time.Duration
	err  error
}

// seededDB returns a closed SQLite database holding seededSessions
// sessions, created through the Store API once per test binary run.
func seededDB(b *testing.B) string {
	b.Helper()
	dir := sharedDir(b)
	seeded.once.Do(func() {
		start := time.Now()
		path := filepath.Join(dir, "seeded.db")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		st, err := sessions.Open(ctx, "sqlite:"+path)
		if err != nil {
			seeded.err = fmt.Errorf("open the template store: %w", err)
			return
		}
		for i := range seededSessions {
			at := seededEpoch.Add(-time.Duration(i) * time.Second)
			if _, err := st.CreateSession(ctx, sessions.Session{
				ID: fmt.Sprintf("seed_%05d", i), AgentID: "main", Source: "cli",
				Title:     fmt.Sprintf("Seeded session %d", i),
				CreatedAt: at, UpdatedAt: at,
			}); err != nil {
				st.Close()
				seeded.err = fmt.Errorf("seed session %d: %w", i, err)
				return
			}
		}
		if err := st.Close(); err != nil {
			seeded.err = fmt.Errorf("close the template store: %w", err)
			return
		}
		seeded.db, seeded.took = path, time.Since(start)
	})
	if seeded.err != nil {
		b.Fatal(seeded.err)
	}
	return seeded.db
}

// seededState is a fresh state directory holding a copy of the seeded
// database.
func seededState(b *testing.B) *state {
	b.Helper()
	db := seededDB(b)
	st := newState(b, filepath.Join(b.TempDir(), "state"), tinyScript)
	for _, suffix := range []string{"", "-wal"} {
		if err := copyFile(db+suffix, filepath.Join(st.dir, "openprogram.db"+suffix)); err != nil {
			b.Fatalf("copy the seeded database: %v", err)
		}
	}
	return st
}

// BenchmarkSessionsList measures sessions_list round trips over stdio
// against 10,000 sessions (see the package documentation).
func BenchmarkSessionsList(b *testing.B) {
	bin := binary(b)
	st := seededState(b)
	b.Logf("template store: %d sessions seeded through the Store API in %v", seededSessions, seeded.took.Round(time.Millisecond))
	b.Run("raw", func(b *testing.B) { benchSessionsListRaw(b, bin, st) })
	b.Run("sdk", func(b *testing.B) { benchSessionsListSDK(b, bin, st) })
}

// inflights are the numbers of concurrent calls BenchmarkSessionsList runs.
var inflights = []int{1, 50}

// loadStats measures one sub-benchmark: per-call latencies and the CPU time
// of the server and of this process.
type loadStats struct {
	pid        int
	start      time.Time
	mu         sync.Mutex
	s          samples
	err        error
	server0    time.Duration
	client0    time.Duration
	serverUsed time.Duration
	clientUsed time.Duration
}

func startLoad(b *testing.B, pid int) *loadStats {
	b.Helper()
	cpu, err := procCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	return &loadStats{pid: pid, start: time.Now(), server0: cpu, client0: selfCPU()}
}

func (l *loadStats) add(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.s = append(l.s, d)
	if err != nil && l.err == nil {
		l.err = err
	}
}

// stop ends the measurement (call it once every call has been answered)
// and reports ns/op as the wall time per call, first call to last answer
// (b.Loop's own timer stops before the last calls in flight are answered),
// p50-ms, p99-ms, server-CPU-µs/op, client-CPU-µs/op and the server's
// peak-RSS-MiB.
func (l *loadStats) stop(b *testing.B) {
	b.Helper()
	wall := time.Since(l.start)
	l.clientUsed = selfCPU() - l.client0
	cpu, err := procCPU(l.pid)
	if err != nil {
		b.Fatal(err)
	}
	l.serverUsed = cpu - l.server0
	if l.err != nil {
		b.Fatal(l.err)
	}
	n := float64(len(l.s))
	b.ReportMetric(float64(wall.Nanoseconds())/n, "ns/op")
	b.ReportMetric(ms(l.s.quantile(0.50)), "p50-ms")
	b.ReportMetric(ms(l.s.quantile(0.99)), "p99-ms")
	b.ReportMetric(float64(l.serverUsed.Microseconds())/n, "server-CPU-µs/op")
	b.ReportMetric(float64(l.clientUsed.Microseconds())/n, "client-CPU-µs/op")
	status, err := procStatus(l.pid, "VmHWM")
	if err != nil {
		b.Fatalf("read the server's peak RSS: %v", err)
	}
	b.ReportMetric(float64(status["VmHWM"])/1024, "peak-RSS-MiB")
}

// sessionsListPrefix starts the answer to a successful sessions_list call
// (after its id): one text content holding a JSON array of objects.
var sessionsListPrefix = []byte(`,"result":{"content":[{"type":"text","text":"[{`)

// benchSessionsListRaw drives the server over raw pipes: one goroutine
// writes requests (at most inflight unanswered), another reads answers and
// matches them by id.
func benchSessionsListRaw(b *testing.B, bin string, st *state) {
	p, _ := startRaw(b, bin, st, initializeLine)
	defer p.close(b)
	p.initialize(b)

	// Check one answer in full: the 100 newest sessions, newest first.
	p.send(b, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sessions_list","arguments":{}}}`+"\n"))
	m, _ := p.response(b, "2")
	checkSessionsList(b, m)

	next := int64(100)
	for _, inflight := range inflights {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			var (
				mu      sync.Mutex
				started = map[int64]time.Time{}
				slots   = make(chan struct{}, inflight)
				total   = make(chan int64, 1) // how many calls were sent, before the final ping
				read    = make(chan error, 1)
			)
			load := startLoad(b, p.cmd.Process.Pid)
			// The reader matches answers to calls by id. After the last
			// call the writer publishes the count and sends a ping (id 0);
			// once the reader has seen the ping's answer it knows how many
			// answers are still to come, so it never waits for a line that
			// will not arrive.
			go func() {
				var got int64
				want := int64(-1)
				for want < 0 || got < want {
					line, at, err := p.tryReadLine()
					if err != nil {
						read <- err
						return
					}
					id, rest, ok := rawID(line)
					if ok && id == 0 {
						want = <-total
						continue
					}
					if !ok || !bytes.HasPrefix(rest, sessionsListPrefix) || bytes.Contains(rest, []byte(`"isError":true`)) {
						read <- fmt.Errorf("not a successful sessions_list answer: %.300q", line)
						return
					}
					mu.Lock()
					t0, found := started[id]
					delete(started, id)
					mu.Unlock()
					if !found {
						read <- fmt.Errorf("answer to unknown id %d", id)
						return
					}
					load.add(at.Sub(t0), nil)
					got++
					<-slots
				}
				read <- nil
			}()
			var sent int64
			buf := make([]byte, 0, 128)
			for b.Loop() {
				select {
				case slots <- struct{}{}:
				case err := <-read:
					b.Fatalf("%v\nserver log:\n%s", err, st.logTail())
				}
				next++
				buf = fmt.Appendf(buf[:0], `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sessions_list","arguments":{}}}`+"\n", next)
				mu.Lock()
				started[next] = time.Now()
				mu.Unlock()
				p.send(b, buf)
				sent++
			}
			total <- sent
			p.send(b, []byte(`{"jsonrpc":"2.0","id":0,"method":"ping"}`+"\n"))
			if err := <-read; err != nil {
				b.Fatalf("%v\nserver log:\n%s", err, st.logTail())
			}
			load.stop(b)
		})
	}
}

// rawID reads the id of an answer line `{"jsonrpc":"2.0","id":N,...` and
// returns what follows it.
func rawID(line []byte) (int64, []byte, bool) {
	const head = `{"jsonrpc":"2.0","id":`
	rest, ok := bytes.CutPrefix(line, []byte(head))
	if !ok {
		return 0, nil, false
	}
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return 0, nil, false
	}
	id, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	return id, rest[i:], err == nil
}

// checkSessionsList fails b unless m is a sessions_list answer holding
// the 100 newest seeded sessions, newest first.
func checkSessionsList(b *testing.B, m message) {
	b.Helper()
	var res mcp.CallToolResult
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil || res.IsError || len(res.Content) != 1 {
		b.Fatalf("sessions_list failed: result=%.300s error=%+v", m.Result, m.Error)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		b.Fatalf("sessions_list: content is %T, want text", res.Content[0])
	}
	var got []contracts.SessionSummary
	if err := contracts.DecodePayload(text.Text, &got); err != nil {
		b.Fatal(err)
	}
	checkSummaries(b, got)
}

func checkSummaries(b *testing.B, got []contracts.SessionSummary) {
	b.Helper()
	if len(got) != 100 || got[0].ID != "seed_00000" || got[99].ID != "seed_00099" {
		b.Fatalf("sessions_list returned %d sessions, first %+v", len(got), got[:min(1, len(got))])
	}
}

// benchSessionsListSDK drives the server through a go-sdk client session,
// inflight goroutines calling tools/call sessions_list.
func benchSessionsListSDK(b *testing.B, bin string, st *state) {
	cmd, logf := st.serveCmd(b, bin)
	defer logf.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "openprogram-perf", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), lineTimeout)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, nil)
	cancel()
	if err != nil {
		killCmd(cmd)
		b.Fatalf("connect: %v\nserver log:\n%s", err, st.logTail())
	}
	defer func() {
		if err := cs.Close(); err != nil {
			b.Errorf("close the client session: %v\nserver log:\n%s", err, st.logTail())
		}
	}()

	got, err := contracts.NewClient(cs).SessionsList(context.Background())
	if err != nil {
		b.Fatalf("sessions_list: %v", err)
	}
	checkSummaries(b, got)

	params := &mcp.CallToolParams{Name: contracts.SessionsList, Arguments: map[string]any{}}
	call := func() (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), lineTimeout)
		defer cancel()
		start := time.Now()
		res, err := cs.CallTool(ctx, params)
		d := time.Since(start)
		if err == nil && (res.IsError || len(res.Content) != 1) {
			err = fmt.Errorf("sessions_list: unexpected result %+v", res)
		}
		return d, err
	}
	for _, inflight := range inflights {
		b.Run(fmt.Sprintf("inflight=%d", inflight), func(b *testing.B) {
			var wg sync.WaitGroup
			slots := make(chan struct{}, inflight)
			load := startLoad(b, cmd.Process.Pid)
			for b.Loop() {
				slots <- struct{}{}
				wg.Go(func() {
					load.add(call())
					<-slots
				})
			}
			wg.Wait()
			load.stop(b)
		})
	}
}
