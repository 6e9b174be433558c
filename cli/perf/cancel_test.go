//go:build linux

package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/runtime/builtin/bash"
	"github.com/openprogram/openprogram/runtime/tool"
)

// slowTurns is how many model turns the cancellation script holds: one is
// consumed per iteration, and a b.Loop of a second runs far fewer.
const slowTurns = 20_000

// slowScript is a model script whose every turn waits a minute before its
// first word, so a prompt_send is always still running when it is
// cancelled.
func slowScript() string {
	var sb strings.Builder
	sb.WriteString(`{"turns": [`)
	for i := range slowTurns {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"text": "too late", "delay_ms": 60000}`)
	}
	sb.WriteString(`]}`)
	return sb.String()
}

// BenchmarkCancelPromptSend measures notifications/cancelled to the
// cancelled prompt_send's error response, over raw pipes (see the package
// documentation).
func BenchmarkCancelPromptSend(b *testing.B) {
	bin := binary(b)
	st := newState(b, filepath.Join(b.TempDir(), "state"), slowScript())
	p, _ := startRaw(b, bin, st, initializeLine)
	defer p.close(b)
	p.initialize(b)

	var s samples
	id := 100
	var buf []byte
	for b.Loop() {
		id++
		token := "p" + strconv.Itoa(id)
		buf = fmt.Appendf(buf[:0], `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"Tell me a long story."},"_meta":{"progressToken":%q}}}`+"\n", id, token)
		p.send(b, buf)
		// Wait for the turn's first progress notification: it is running.
		for {
			m, _ := p.readMsg(b)
			if m.Method == "" {
				b.Fatalf("prompt_send %s answered before it could be cancelled: result=%.300s error=%+v", m.ID, m.Result, m.Error)
			}
			if m.Method == "notifications/progress" && bytes.Contains(m.Params, []byte(`"progressToken":"`+token+`"`)) {
				break
			}
		}
		buf = fmt.Appendf(buf[:0], `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"benchmark"}}`+"\n", id)
		start := time.Now()
		p.send(b, buf)
		m, at := p.response(b, strconv.Itoa(id))
		s = append(s, at.Sub(start))
		if m.Error == nil || m.Error.Code != 0 || m.Error.Message != "Request cancelled" {
			b.Fatalf("cancelled prompt_send %d: want error {0, Request cancelled}, got result=%.300s error=%+v", id, m.Result, m.Error)
		}
	}
	reportLatency(b, s, true)
}

// BenchmarkBashCancel measures how fast the runtime's bash tool kills the
// whole process group of a cancelled command (see the package
// documentation).
func BenchmarkBashCancel(b *testing.B) {
	t := bash.New(&bash.Options{WorkDirs: []string{b.TempDir()}})
	args := json.RawMessage(`{"command":"sleep 300 & sleep 300 & wait"}`)
	var gone, returned samples
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		type outcome struct {
			res tool.Result
			err error
			at  time.Time
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := t.Execute(ctx, "perf", args, nil)
			done <- outcome{res, err, time.Now()}
		}()
		pids, err := waitGroupStarted(done)
		if err != nil {
			cancel()
			b.Fatal(err)
		}

		start := time.Now()
		cancel()
		deadline := start.Add(lineTimeout)
		for anyAlive(pids) {
			if time.Now().After(deadline) {
				b.Fatalf("processes %v still alive %v after the cancel", pids, lineTimeout)
			}
			time.Sleep(100 * time.Microsecond)
		}
		gone = append(gone, time.Since(start))
		var o outcome
		select {
		case o = <-done:
		case <-time.After(lineTimeout):
			b.Fatalf("Execute did not return within %v of the cancel", lineTimeout)
		}
		returned = append(returned, o.at.Sub(start))
		if o.err != nil || !o.res.IsError || o.res.Details[tool.DetailCancelled] != true {
			b.Fatalf("cancelled bash: want a cancelled result, got %+v, %v", o.res, o.err)
		}
	}
	b.ReportMetric(float64(gone.mean().Nanoseconds()), "ns/op")
	b.ReportMetric(ms(gone.quantile(0.5)), "cancel-to-gone-ms")
	b.ReportMetric(ms(gone.quantile(0.99)), "cancel-to-gone-p99-ms")
	b.ReportMetric(ms(returned.quantile(0.5)), "cancel-to-return-ms")
}

// waitGroupStarted waits until this process's bash child and its two
// sleeps run, and returns their pids. It fails if Execute returns first.
func waitGroupStarted[T any](done <-chan T) ([]int, error) {
	deadline := time.Now().Add(lineTimeout)
	self := os.Getpid()
	for {
		select {
		case <-done:
			return nil, fmt.Errorf("bash returned before it was cancelled")
		default:
		}
		for _, sh := range childrenOf(self) {
			if info, ok := readProc(sh); !ok || info.pgid != sh {
				continue
			}
			pids := []int{sh}
			for _, c := range childrenOf(sh) {
				if info, ok := readProc(c); ok && info.pgid == sh && info.comm == "sleep" && info.alive() {
					pids = append(pids, c)
				}
			}
			if len(pids) == 3 {
				return pids, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("bash and its two sleeps did not start within %v", lineTimeout)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

type procInfo struct {
	pid, ppid, pgid int
	state           byte
	comm            string
}

func (p procInfo) alive() bool { return p.state != 'Z' && p.state != 'X' }

// readProc reads /proc/<pid>/stat.
func readProc(pid int) (procInfo, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	// pid (comm) state ppid pgrp ...
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return procInfo{}, false
	}
	f := strings.Fields(string(data[end+1:]))
	if len(f) < 3 || len(f[0]) == 0 {
		return procInfo{}, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return procInfo{}, false
	}
	return procInfo{pid: pid, ppid: ppid, pgid: pgid, state: f[0][0], comm: string(data[open+1 : end])}, true
}

// childrenOf returns the child processes of pid, from
// /proc/<pid>/task/*/children, or by scanning /proc where the kernel has no
// such files.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) && t.Name() == strconv.Itoa(pid) {
			return scanChildren(pid)
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func scanChildren(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(c); ok && p.ppid == pid {
			out = append(out, c)
		}
	}
	return out
}

// anyAlive reports whether any of pids is a live process of the group
// pids[0] leads (not gone, not a zombie waiting to be reaped).
func anyAlive(pids []int) bool {
	for _, pid := range pids {
		if p, ok := readProc(pid); ok && p.alive() && p.pgid == pids[0] {
			return true
		}
	}
	return false
}
