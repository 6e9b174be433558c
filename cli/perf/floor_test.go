//go:build linux

package perf

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// floorBinary builds the bare go-sdk server of testdata/floor with this
// module's go-sdk, as ./cmd/openprogram is built (static, -trimpath,
// stripped), once per test binary run.
func floorBinary(tb testing.TB) string {
	tb.Helper()
	dir := sharedDir(tb)
	shared.floorOnce.Do(func() {
		// Installed as the server is (see binary), so that both start from
		// the same page-cache state: the file-backed part of the peak RSS
		// depends on it as much as on the code.
		built, out := filepath.Join(dir, "floor.build"), filepath.Join(dir, "floor")
		if shared.floorErr = goBuild(built, "./perf/testdata/floor"); shared.floorErr != nil {
			return
		}
		shared.floorErr = installCopy(built, out)
		os.Remove(built)
		shared.floor = out
	})
	if shared.floorErr != nil {
		tb.Fatal(shared.floorErr)
	}
	return shared.floor
}

// startupInput is what a client sends on every launch to learn the tools:
// initialize, notifications/initialized and tools/list, then end of input.
var startupInput = string(initializeLine) + string(initializedLine) + string(toolsListLine)

// processRun is one whole process: exec to exit.
type processRun struct {
	wall, cpu time.Duration
	peakKB    int64 // VmHWM once tools/list is answered
}

// runWhole starts cmd, writes startupInput to its stdin, closes stdin once
// the tools/list answer (id 2) is read (go-sdk's own stdio transport drops
// answers still due at end of input), waits for the exit, and returns its
// wall time, CPU time (user + system) and peak resident set.
func runWhole(b *testing.B, cmd *exec.Cmd, logTail func() string) processRun {
	b.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", cmd.Path, err)
	}
	timer := time.AfterFunc(lineTimeout+exitTimeout, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	if _, err := io.WriteString(in, startupInput); err != nil {
		killCmd(cmd)
		b.Fatalf("write to %s: %v\n%s", cmd.Path, err, logTail())
	}
	r := bufio.NewReader(out)
	answered := false
	for !answered {
		line, err := r.ReadString('\n')
		if err != nil {
			killCmd(cmd)
			b.Fatalf("%s did not answer tools/list: %v\n%s", cmd.Path, err, logTail())
		}
		answered = strings.HasPrefix(line, `{"jsonrpc":"2.0","id":2,"result":{`) && strings.Contains(line, `"tools":[{`)
	}
	// The peak resident set so far, read before the process exits: the
	// ru_maxrss that wait reports is no use here, because Go starts a
	// child with vfork, and exec records the parent's (this benchmark's)
	// high-water mark as the child's.
	status, err := procStatus(cmd.Process.Pid, "VmHWM")
	if err != nil {
		killCmd(cmd)
		b.Fatalf("read the peak resident set of %s: %v", cmd.Path, err)
	}
	in.Close()
	_, _ = io.Copy(io.Discard, r)
	if err := cmd.Wait(); err != nil {
		b.Fatalf("%s: %v\n%s", cmd.Path, err, logTail())
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return processRun{wall: wall, cpu: cpu, peakKB: status["VmHWM"]}
}

// BenchmarkStartupFloor runs `openprogram mcp serve` and the bare go-sdk
// floor server (testdata/floor) in turn, each as a whole process fed
// initialize, notifications/initialized and tools/list, its stdin closed
// once tools/list is answered, timed from exec to exit,
// and reports, as medians over the pairs: ours-wall-ms, floor-wall-ms,
// ours-CPU-ms, floor-CPU-ms, ours-peak-RSS-MiB, floor-peak-RSS-MiB, and the
// ratios wall-x, CPU-x and peak-RSS-x (ours / floor, pair by pair, so a
// machine that slows down during the run moves both). ns/op is the mean
// wall time of one pair.
func BenchmarkStartupFloor(b *testing.B) {
	bin, floor := binary(b), floorBinary(b)
	st := warmState(b, bin)
	var ours, base []processRun
	var wallX, cpuX, rssX []float64
	for b.Loop() {
		cmd, logf := st.serveCmd(b, bin)
		o := runWhole(b, cmd, st.logTail)
		logf.Close()
		f := runWhole(b, exec.Command(floor), func() string { return "" })
		ours, base = append(ours, o), append(base, f)
		wallX = append(wallX, float64(o.wall)/float64(f.wall))
		cpuX = append(cpuX, float64(o.cpu)/float64(max(f.cpu, time.Microsecond)))
		rssX = append(rssX, float64(o.peakKB)/float64(f.peakKB))
	}
	med := func(runs []processRun, pick func(processRun) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = pick(r)
		}
		return quantile(v, 0.5)
	}
	wall := func(r processRun) float64 { return ms(r.wall) }
	cpu := func(r processRun) float64 { return ms(r.cpu) }
	rss := func(r processRun) float64 { return float64(r.peakKB) / 1024 }
	b.ReportMetric(med(ours, wall), "ours-wall-ms")
	b.ReportMetric(med(base, wall), "floor-wall-ms")
	b.ReportMetric(med(ours, cpu), "ours-CPU-ms")
	b.ReportMetric(med(base, cpu), "floor-CPU-ms")
	b.ReportMetric(med(ours, rss), "ours-peak-RSS-MiB")
	b.ReportMetric(med(base, rss), "floor-peak-RSS-MiB")
	b.ReportMetric(quantile(wallX, 0.5), "wall-x")
	b.ReportMetric(quantile(cpuX, 0.5), "CPU-x")
	b.ReportMetric(quantile(rssX, 0.5), "peak-RSS-x")
}
