//go:build linux

package perf

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// pipelinedLines is how many lines BenchmarkPipelinedBigLines writes (100
// by default; fewer lines give a quicker, proportionally shorter run).
var pipelinedLines = flag.Int("pipeline.lines", 100, "lines of 16 MiB that BenchmarkPipelinedBigLines pipelines into one server")

// Shape of BenchmarkPipelinedBigLines: lines of bigLine bytes each, written
// as fast as the server reads them.
const (
	bigLine = 16 << 20
	// rssGuard stops a run whose server grows past it (the machine is
	// shared): the run reports rssGuard as its peak and says so in the log.
	rssGuard = 4 << 30
)

// BenchmarkPipelinedBigLines pipelines 100 lines of 16 MiB (-pipeline.lines)
// into one server
// and reports the server's peak resident set (VmHWM) once every line has been
// answered:
//
//   - memory_update: tools/call tool_call memory_update with a content that
//     fills the line to 16 MiB (a valid request the store writes);
//   - junk-at-limit: 16 MiB that is not JSON (-32700 each);
//   - junk-overlong: 16 MiB + 1 byte of junk (-32600 each, discarded while
//     read).
//
// peak-RSS-MiB is the server's VmHWM; ns/op is the time from the first
// byte written to the last answer read; server-CPU-s is the CPU time the
// server had used by then (start-up and initialize included), which depends
// less than ns/op on how busy the machine is. A server passing rssGuard is
// killed and reported at the guard.
func BenchmarkPipelinedBigLines(b *testing.B) {
	bin := binary(b)
	cases := []struct {
		name string
		line func(id int) []byte
	}{
		{"memory_update", memoryUpdateLine},
		{"junk-at-limit", func(int) []byte { return junkLine(bigLine) }},
		{"junk-overlong", func(int) []byte { return junkLine(bigLine + 1) }},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var peaks []int64
			var took, cpu samples
			for b.Loop() {
				peak, d, c := pipelineOnce(b, bin, tc.line)
				peaks = append(peaks, peak)
				took = append(took, d)
				cpu = append(cpu, c)
			}
			b.ReportMetric(float64(took.mean().Nanoseconds()), "ns/op")
			b.ReportMetric(cpu.mean().Seconds(), "server-CPU-s")
			b.ReportMetric(float64(quantile(peaks, 0.5))/1024, "peak-RSS-MiB")
			b.ReportMetric(float64(quantile(peaks, 1))/1024, "max-peak-RSS-MiB")
		})
	}
}

// memoryUpdateLine is a memory_update call through tool_call whose line is
// exactly bigLine bytes long (newline excluded).
func memoryUpdateLine(id int) []byte {
	head := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"tool_call","arguments":{"name":"memory_update","arguments":{"path":"perf/big-` + strconv.Itoa(id) + `","content":"`
	const tail = `"}}}}`
	line := make([]byte, 0, bigLine+1)
	line = append(line, head...)
	line = append(line, bytes.Repeat([]byte("a"), bigLine-len(head)-len(tail))...)
	line = append(line, tail...)
	return append(line, '\n')
}

// junkLine is n bytes that are not JSON, and a newline.
func junkLine(n int) []byte {
	return append(bytes.Repeat([]byte("x"), n), '\n')
}

// pipelineOnce starts a server that exposes memory_update, writes the lines
// from a goroutine, reads one answer per line, and returns the server's
// VmHWM (kB), the time the lines took and the server's CPU time.
func pipelineOnce(b *testing.B, bin string, line func(id int) []byte) (int64, time.Duration, time.Duration) {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "state")
	st := newState(b, dir, tinyScript)
	cfg, err := json.Marshal(map[string]any{
		"model":      map[string]any{"provider": "scripted", "script": filepath.Join(dir, "script.json")},
		"mcp_server": map[string]any{"exposed_tools": []string{"memory_update"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		b.Fatal(err)
	}
	p, _ := startRaw(b, bin, st, initializeLine)
	p.initialize(b)
	lines := make([][]byte, *pipelinedLines)
	for i := range lines {
		lines[i] = line(100 + i)
	}
	pid := p.cmd.Process.Pid
	start := time.Now()
	writeErr := make(chan error, 1)
	go func() {
		for _, l := range lines {
			if _, err := p.in.Write(l); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()
	// The guard: sample the server while it works.
	guardDone := make(chan struct{})
	guarded := make(chan bool, 1)
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-guardDone:
				guarded <- false
				return
			case <-t.C:
				if s, err := procStatus(pid, "VmRSS"); err == nil && s["VmRSS"]*1024 > rssGuard {
					_ = p.cmd.Process.Kill()
					guarded <- true
					return
				}
			}
		}
	}()
	answers := 0
	for answers < *pipelinedLines {
		if err := p.out.SetReadDeadline(time.Now().Add(2 * time.Minute)); err != nil {
			b.Fatal(err)
		}
		l, err := p.r.ReadBytes('\n')
		if err != nil {
			break
		}
		var m message
		if json.Unmarshal(l, &m) == nil && m.Method == "" {
			answers++
		}
	}
	took := time.Since(start)
	status, statusErr := procStatus(pid, "VmHWM")
	cpu, cpuErr := procCPU(pid)
	close(guardDone)
	if <-guarded {
		b.Logf("the server passed %d MiB and was killed; reporting the guard as its peak", rssGuard>>20)
		return rssGuard >> 10, took, cpu
	}
	if answers < *pipelinedLines {
		b.Fatalf("read %d answers of %d\nserver log:\n%s", answers, *pipelinedLines, st.logTail())
	}
	if err := <-writeErr; err != nil {
		b.Fatalf("write the lines: %v", err)
	}
	if statusErr != nil {
		b.Fatal(statusErr)
	}
	if cpuErr != nil {
		b.Fatal(cpuErr)
	}
	p.close(b)
	return status["VmHWM"], took, cpu
}
