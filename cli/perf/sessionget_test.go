//go:build linux

package perf

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// Sizes of BenchmarkSessionGetRSS: a session of bigSessionMessages messages
// of bigMessageBytes each (60 MiB of content), read by
// concurrentSessionGets session_get calls written in one go.
const (
	bigSessionMessages    = 60
	bigMessageBytes       = 1 << 20
	concurrentSessionGets = 3
)

// bigSessionID is the id of the seeded session.
const bigSessionID = "cli_00000000000000000000000000000060"

// bigState is a fresh state directory whose store holds one 60 MiB session,
// written through the Store API.
func bigState(b *testing.B) *state {
	b.Helper()
	st := newState(b, filepath.Join(b.TempDir(), "state"), tinyScript)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	store, err := sessions.Open(ctx, "sqlite:"+filepath.Join(st.dir, "openprogram.db"))
	if err != nil {
		b.Fatalf("open the store: %v", err)
	}
	defer store.Close()
	if _, err := store.CreateSession(ctx, sessions.Session{ID: bigSessionID, AgentID: "main", Source: "cli", Title: "big", CreatedAt: seededEpoch, UpdatedAt: seededEpoch}); err != nil {
		b.Fatalf("create the session: %v", err)
	}
	parent := ""
	for i := range bigSessionMessages {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		// Quotes and a line break in every line: the payload escapes them
		// once, the frame twice.
		line := fmt.Sprintf("message %d says \"hello\"\n", i)
		content := strings.Repeat(line, bigMessageBytes/len(line)+1)[:bigMessageBytes]
		msgs, err := store.AppendMessages(ctx, bigSessionID, parent, []sessions.NewMessage{{Role: role, Content: content}}, true)
		if err != nil {
			b.Fatalf("append message %d: %v", i, err)
		}
		parent = msgs[0].ID
	}
	return st
}

// BenchmarkSessionGetRSS measures the server's peak resident set (VmHWM)
// while it answers concurrentSessionGets session_get calls, written in one
// go, on a 60 MiB session. ns/op is the time from writing the calls to
// reading the last answer; answer-MiB is the size of one answer line.
func BenchmarkSessionGetRSS(b *testing.B) {
	bin := binary(b)
	st := bigState(b)
	var calls []byte
	for i := range concurrentSessionGets {
		calls = fmt.Appendf(calls, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"session_get","arguments":{"session_id":%q}}}`+"\n", 10+i, bigSessionID)
	}
	var peaks []int64
	var answer int
	for b.Loop() {
		p, _ := startRaw(b, bin, st, initializeLine)
		p.initialize(b)
		p.send(b, calls)
		for range concurrentSessionGets {
			line, err := readLineWithin(p, 2*time.Minute)
			if err != nil {
				b.Fatalf("%v\nserver log:\n%s", err, st.logTail())
			}
			if !strings.Contains(string(line), `"result"`) || strings.Contains(string(line), `"isError":true`) {
				b.Fatalf("not a successful session_get answer: %.300q", line)
			}
			answer = len(line)
		}
		status, err := procStatus(p.cmd.Process.Pid, "VmHWM")
		if err != nil {
			b.Fatalf("read the server's peak RSS: %v", err)
		}
		peaks = append(peaks, status["VmHWM"])
		p.close(b)
	}
	b.ReportMetric(float64(quantile(peaks, 0.5))/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(quantile(peaks, 1))/1024, "max-peak-RSS-MiB")
	b.ReportMetric(float64(answer)/(1<<20), "answer-MiB")
}

// readLineWithin reads one line, waiting at most d: a large answer on a
// loaded machine may take longer than lineTimeout.
func readLineWithin(p *rawProc, d time.Duration) ([]byte, error) {
	if err := p.out.SetReadDeadline(time.Now().Add(d)); err != nil {
		return nil, err
	}
	line, err := p.r.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("read from the server: %w", err)
	}
	return line, nil
}
