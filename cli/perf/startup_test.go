//go:build linux

package perf

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// warmState returns a fresh state directory whose database a first server
// start has already created and migrated.
func warmState(b *testing.B, bin string) *state {
	b.Helper()
	st := newState(b, filepath.Join(b.TempDir(), "state"), tinyScript)
	p, _ := startRaw(b, bin, st, initializeLine)
	p.initialize(b)
	p.close(b)
	return st
}

// BenchmarkStartInitialize measures process start to the initialize
// response (see the package documentation).
func BenchmarkStartInitialize(b *testing.B) {
	b.Run("raw", func(b *testing.B) {
		bin := binary(b)
		st := warmState(b, bin)
		var s, cpu samples
		for b.Loop() {
			p, start := startRaw(b, bin, st, initializeLine)
			line, at := p.readLine(b)
			s = append(s, at.Sub(start))
			cpu = append(cpu, serverCPU(b, p.cmd.Process.Pid))
			checkInitialize(b, decode(b, line))
			p.close(b)
		}
		reportLatency(b, s, false)
		reportCPU(b, cpu)
	})

	b.Run("first-run", func(b *testing.B) {
		bin := binary(b)
		root := b.TempDir()
		var s, cpu samples
		n := 0
		for b.Loop() {
			n++
			st := newState(b, filepath.Join(root, fmt.Sprint(n)), tinyScript)
			p, start := startRaw(b, bin, st, initializeLine)
			line, at := p.readLine(b)
			s = append(s, at.Sub(start))
			cpu = append(cpu, serverCPU(b, p.cmd.Process.Pid))
			checkInitialize(b, decode(b, line))
			p.close(b)
		}
		reportLatency(b, s, false)
		reportCPU(b, cpu)
	})

	b.Run("sdk", func(b *testing.B) {
		bin := binary(b)
		st := warmState(b, bin)
		client := mcp.NewClient(&mcp.Implementation{Name: "openprogram-perf", Version: "1"}, nil)
		var s, cpu samples
		for b.Loop() {
			cmd, logf := st.serveCmd(b, bin)
			ctx, cancel := context.WithTimeout(context.Background(), lineTimeout)
			start := time.Now()
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: exitTimeout}, nil)
			d := time.Since(start)
			cancel()
			logf.Close()
			if err != nil {
				killCmd(cmd)
				b.Fatalf("connect: %v\nserver log:\n%s", err, st.logTail())
			}
			s = append(s, d)
			cpu = append(cpu, serverCPU(b, cmd.Process.Pid))
			if got := cs.InitializeResult().ServerInfo.Name; got != "openprogram" {
				b.Fatalf("serverInfo.name = %q, want openprogram", got)
			}
			if err := cs.Close(); err != nil {
				b.Fatalf("close the client session: %v\nserver log:\n%s", err, st.logTail())
			}
		}
		reportLatency(b, s, false)
		reportCPU(b, cpu)
	})
}

// BenchmarkPeakRSS measures the server's peak resident set after
// initialize and tools/list (see the package documentation).
func BenchmarkPeakRSS(b *testing.B) {
	bin := binary(b)
	st := warmState(b, bin)
	var s samples
	var hwm, rss, anon, file []int64 // kB
	for b.Loop() {
		p, start := startRaw(b, bin, st, initializeLine)
		p.initialize(b)
		p.send(b, toolsListLine)
		m, at := p.response(b, "2")
		s = append(s, at.Sub(start))
		if m.Error != nil || len(m.Result) == 0 {
			b.Fatalf("tools/list failed: %+v", m.Error)
		}
		status, err := procStatus(p.cmd.Process.Pid, "VmHWM", "VmRSS", "RssAnon", "RssFile")
		if err != nil {
			b.Fatal(err)
		}
		hwm = append(hwm, status["VmHWM"])
		rss = append(rss, status["VmRSS"])
		anon = append(anon, status["RssAnon"])
		file = append(file, status["RssFile"])
		p.close(b)
	}
	b.ReportMetric(float64(s.mean().Nanoseconds()), "ns/op")
	b.ReportMetric(float64(quantile(hwm, 0.5))/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(quantile(hwm, 1))/1024, "max-peak-RSS-MiB")
	b.ReportMetric(float64(quantile(rss, 0.5))/1024, "RSS-MiB")
	b.ReportMetric(float64(quantile(anon, 0.5))/1024, "anon-RSS-MiB")
	b.ReportMetric(float64(quantile(file, 0.5))/1024, "file-RSS-MiB")
}

// serverCPU returns the CPU time the server has used so far.
func serverCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	d, err := procCPU(pid)
	if err != nil {
		b.Fatalf("read the server's CPU time: %v", err)
	}
	return d
}

// reportCPU reports the median CPU time the server used up to the
// initialize response, as server-CPU-ms.
func reportCPU(b *testing.B, cpu samples) {
	b.Helper()
	b.ReportMetric(ms(cpu.quantile(0.5)), "server-CPU-ms")
}

func decode(b *testing.B, line []byte) message {
	b.Helper()
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		b.Fatalf("decode %q: %v", line, err)
	}
	return m
}

// killCmd kills a started command that is being abandoned.
func killCmd(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.ProcessState == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}
