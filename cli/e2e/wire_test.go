//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/contracts"
)

// pipelinedRequest is the request written behind initialize and
// notifications/initialized in the same write.
const pipelinedRequest = `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
	`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n"

// TestPipelinedInitialize writes initialize, notifications/initialized and
// a request at once into a fresh process's stdin, as `printf ... |
// openprogram mcp serve` does, 100 times (1,000 under -tags long): the
// request must be answered every time, never refused as "before
// initialization". (The race itself is reproduced deterministically by
// internal/stdio's TestRequestBehindInitializeWaitsForItsAnswer; these runs
// check the whole process.)
//
// The run count is fixed, so the test does not depend on the machine's
// speed; pipelinedBound only stops a hung server before go test's timeout.
func TestPipelinedInitialize(t *testing.T) {
	t.Parallel()
	// Every run must pass, whatever the machine's speed: the count is fixed
	// and the bound only stops a hung server. -tags long (make test-long)
	// runs ten times as many.
	runs := 100
	if longTests {
		runs = 1000
	}
	if testing.Short() {
		runs = 20
	}
	const (
		workers        = 4 // two cores: a few processes at a time
		pipelinedBound = 15 * time.Minute
	)
	in := e2etest.NewInstall(t, e2etest.SQLite)
	in.MustRun("sessions", "list") // creates the store once, outside the runs
	ctx, cancel := context.WithTimeout(t.Context(), pipelinedBound)
	defer cancel()
	input := initializeLine + pipelinedRequest
	env := in.Env(e2etest.EnvToken + "=" + in.Token)

	var (
		mu       sync.Mutex
		refusals int
		done     int
		failures []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 5 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for run := range jobs {
				cmd := exec.CommandContext(ctx, e2etest.BinPath, "mcp", "serve")
				cmd.Env = env
				cmd.Stdin = strings.NewReader(input)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if ctx.Err() != nil {
					return // cut short by the bound: not a result
				}
				if err != nil {
					fail("run %d: %v\nstderr:\n%s", run, err, stderr.String())
					continue
				}
				mu.Lock()
				done++
				mu.Unlock()
				answered := false
				for line := range bytes.Lines(out) {
					line = bytes.TrimSuffix(line, []byte("\n"))
					f, err := e2etest.ParseFrame(line)
					if err != nil {
						fail("run %d: stdout line %q is not JSON", run, line)
						continue
					}
					method := ""
					switch f.ID() {
					case "1":
						method = "initialize"
					case "2":
						method = "tools/list"
						if _, ok := f.Members["result"]; ok {
							answered = true
						} else {
							mu.Lock()
							refusals++
							mu.Unlock()
							fail("run %d: the pipelined request was refused: %s", run, line)
						}
					}
					if err := e2etest.Validator.ServerFrame(line, method); err != nil {
						fail("run %d: %v", run, err)
					}
				}
				if !answered {
					fail("run %d: no answer to the pipelined request; stdout:\n%s", run, out)
				}
			}
		})
	}
	start := time.Now()
feed:
	for run := range runs {
		select {
		case jobs <- run:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d of %d runs in %s, %d refused", done, runs, time.Since(start).Round(time.Millisecond), refusals)
	if done < runs {
		t.Errorf("only %d of %d runs completed within %s: a server hung or the machine is overloaded", done, runs, pipelinedBound)
	}
	if refusals != 0 {
		t.Errorf("%d of %d pipelined requests were refused", refusals, done)
	}
	for _, f := range failures {
		t.Error(f)
	}
}

// rawLines reads the server's stdout line by line.
type rawLines struct {
	t  *testing.T
	sc *bufio.Scanner
}

// next returns the next line that is a response to id, skipping others.
func (r *rawLines) next(id string) e2etest.Frame {
	r.t.Helper()
	for r.sc.Scan() {
		f, err := e2etest.ParseFrame(r.sc.Bytes())
		if err != nil {
			r.t.Fatalf("stdout line %q is not JSON", r.sc.Bytes())
		}
		if f.IsResponse() && f.ID() == id {
			return f
		}
	}
	r.t.Fatalf("stdout ended before the response to %s: %v", id, r.sc.Err())
	return e2etest.Frame{}
}

// TestClosedStdout: a client that closes its end of the server's stdout has
// closed the connection. The server's next write fails (EPIPE, never a
// SIGPIPE death): it cancels the running turn (connection_closed), releases
// the session's lease, writes mcp.server.stop after the start record, and
// exits by itself.
func TestClosedStdout(t *testing.T) {
	t.Parallel()
	in := e2etest.NewInstall(t, e2etest.SQLite)
	// An existing session: a new one whose first turn is cancelled before
	// its commit is removed again (no orphan session), so it would not be
	// there for the second process below.
	in.Script(e2etest.Say("first"))
	c0 := in.Serve(nil)
	first, err := c0.Client.PromptSend(e2etest.Ctx(t), contracts.PromptSendArgs{Prompt: "make the session"})
	if err != nil || first.Failed {
		t.Fatalf("first prompt_send = %+v, %v", first, err)
	}
	c0.Close()
	sid := first.SessionID

	in.Script(e2etest.Slowly(40, 100*time.Millisecond))
	c := in.Start(e2etest.EnvToken + "=" + in.Token)
	out := &rawLines{t: t, sc: bufio.NewScanner(c.Stdout)}
	out.sc.Buffer(make([]byte, 64<<10), 1<<20)
	write := func(line string) {
		t.Helper()
		if _, err := c.Stdin.Write([]byte(line + "\n")); err != nil {
			t.Fatalf("write to the server: %v", err)
		}
	}
	write(strings.TrimSuffix(initializeLine, "\n"))
	out.next("1")
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"run until the client goes","session_id":"` + sid + `"},"_meta":{"progressToken":"p"}}}`)
	// The turn runs (and holds the session's lease) once it reports progress.
	for {
		if !out.sc.Scan() {
			t.Fatalf("stdout ended before the turn reported progress: %v", out.sc.Err())
		}
		f, err := e2etest.ParseFrame(out.sc.Bytes())
		if err != nil {
			t.Fatalf("stdout line %q is not JSON", out.sc.Bytes())
		}
		if f.Method() == "notifications/progress" {
			break
		}
		if f.IsResponse() {
			t.Fatalf("prompt_send answered before the client went: %s", f.Raw)
		}
	}
	if err := c.Stdout.Close(); err != nil {
		t.Fatal(err)
	}
	write(`{"jsonrpc":"2.0","id":"after-close","method":"ping"}`)
	code := c.WaitExit(e2etest.ExitTimeout)
	if ws, ok := c.Cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("the server died of %v; want it to exit by itself\nstderr:\n%s", ws.Signal(), c.Stderr)
	}
	c.WantExit = code // any status: how it exits is its own decision
	c.Close()

	recs := in.Audit()
	var start, stop = -1, -1
	for i, r := range recs {
		switch r.Type {
		case "mcp.server.start":
			start = i
		case "mcp.server.stop":
			stop = i
		}
	}
	if start < 0 || stop < start {
		t.Errorf("audit records %+v: want mcp.server.stop after mcp.server.start", recs)
	}
	cancelled := e2etest.AuditOf(recs, "mcp.request.cancelled")
	if len(cancelled) != 1 || cancelled[0].PayloadMap(t)["reason"] != "connection_closed" {
		t.Errorf("mcp.request.cancelled records = %+v, want one with reason connection_closed", cancelled)
	}

	// The lease is free at once: another process runs a turn on the session.
	in.Script(e2etest.Say("next"))
	c2 := in.Serve(nil)
	res, err := c2.Client.PromptSend(e2etest.Ctx(t), contracts.PromptSendArgs{Prompt: "after the close", SessionID: sid})
	if err != nil || res.Failed || res.SessionID != sid {
		t.Errorf("prompt_send on the session after the close = %+v, %v; want a completed turn (lease released)", res, err)
	}
}

// TestSIGINT: SIGINT ends a connection as SIGTERM does (TestSIGTERM).
func TestSIGINT(t *testing.T) {
	t.Parallel()
	testSignalEndsTurn(t, syscall.SIGINT)
}

// testSignalEndsTurn: sig (SIGTERM or SIGINT) during a turn cancels it
// (connection_closed), writes mcp.server.stop, and the server exits 0.
func testSignalEndsTurn(t *testing.T, sig syscall.Signal) {
	in := e2etest.NewInstall(t, e2etest.SQLite)
	in.Script(e2etest.Slowly(100, 100*time.Millisecond))
	c := in.Serve(nil)
	started := make(chan struct{}, 1)
	var rec progressRecorder
	done := promptAsync(e2etest.Ctx(t), c, contracts.PromptSendArgs{Prompt: "run until the signal"}, rec.on("turn started", started))
	awaitSignal(t, "the turn starting", started, done)
	req := c.LastCallTo(contracts.PromptSend)
	if err := c.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if code := c.WaitExit(e2etest.ExitTimeout); code != 0 {
		t.Errorf("exit status after %v = %d, want 0\nstderr:\n%s", sig, code, c.Stderr)
	}
	if o := awaitOutcome(t, done); o.err == nil {
		t.Errorf("prompt_send cut off by %v returned a result %+v", sig, o.res)
	}
	if resp, ok := e2etest.ResponseTo(c.Out.Frames(), req.ID()); ok {
		t.Errorf("the turn cut off by %v got a response %s", sig, resp.Raw)
	}
	c.Close()
	recs := in.Audit()
	cancelled := e2etest.AuditOf(recs, "mcp.request.cancelled")
	if len(cancelled) != 1 || cancelled[0].PayloadMap(t)["reason"] != "connection_closed" ||
		cancelled[0].PayloadMap(t)["request_id"] != json.Number(req.ID()) {
		t.Errorf("mcp.request.cancelled records = %+v, want one for request %s with reason connection_closed", cancelled, req.ID())
	}
	if stops := e2etest.AuditOf(recs, "mcp.server.stop"); len(stops) != 1 || stops[0].PayloadMap(t)["reason"] != "cancelled" {
		t.Errorf("mcp.server.stop records = %+v, want one with reason cancelled", stops)
	}
	in.VerifyAudit()
}
