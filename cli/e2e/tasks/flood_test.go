//go:build unix

package tasks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
)

// floodFor is how long TestRunnerFlood loops unless
// OPENPROGRAM_TEST_FLOOD_SECONDS says otherwise.
const floodFor = 15 * time.Second

// One client loops creating tasks and cancelling them at once (as many as
// the bound each round),
// on one connection (what a hostile client does): the live runner
// processes of the install never exceed the client's cap, nor the host's
// mcp_server.tasks.max_runners when that is lower. It reports the most
// runners and their summed resident memory seen.
func TestRunnerFlood(t *testing.T) {
	for _, c := range []struct {
		name       string
		maxRunners int // 0: the default
		bound      int
	}{{"client cap", 0, 4}, {"host bound", 2, 2}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := newInstall(t, e2etest.SQLite, longTurn)
			in.MustRun("config", "set", "mcp_server.tasks.max_working", "4")
			if c.maxRunners > 0 {
				in.MustRun("config", "set", "mcp_server.tasks.max_runners", strconv.Itoa(c.maxRunners))
			}
			most, rss := in.flood(t, floodDuration(t), c.bound)
			t.Logf("%s: at most %d live runners (bound %d), at most %.1f MiB resident in them", c.name, most, c.bound, float64(rss)/(1<<20))
			if most > c.bound {
				t.Errorf("%d live runner processes at once, want at most %d", most, c.bound)
			}
		})
	}
}

func floodDuration(t *testing.T) time.Duration {
	if s := os.Getenv("OPENPROGRAM_TEST_FLOOD_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("OPENPROGRAM_TEST_FLOOD_SECONDS=%q: %v", s, err)
		}
		return time.Duration(n) * time.Second
	}
	return floodFor
}

// flood runs the loop of creating per tasks and cancelling them over one
// `mcp serve` for d while it samples the install's live runners, and
// returns the most seen at once and the most resident memory they held
// together.
func (in *install) flood(t *testing.T, d time.Duration, per int) (most int, rss int64) {
	cmd := exec.Command(in.server, "mcp", "serve")
	cmd.Env = in.Env(e2etest.EnvToken + "=" + in.Token)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr e2etest.LockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	next := 0
	send := func(method string, params any) string {
		next++
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": next, "method": method, "params": params})
		if _, err := stdin.Write(append(line, '\n')); err != nil {
			t.Fatalf("write %s: %v\nstderr:\n%s", method, err, stderr.String())
		}
		return strconv.Itoa(next)
	}
	read := func(id string) e2etest.Frame {
		for sc.Scan() {
			f, err := e2etest.ParseFrame(sc.Bytes())
			if err != nil {
				t.Fatalf("stdout line %q: %v", sc.Bytes(), err)
			}
			if f.IsResponse() && f.ID() == id {
				return f
			}
		}
		t.Fatalf("stdout ended before the response to %s: %v\nstderr:\n%s", id, sc.Err(), stderr.String())
		return e2etest.Frame{}
	}
	read(send("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "flood", "version": "1"}}))
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			pids := in.runnersOfInstall()
			var sum int64
			for _, pid := range pids {
				sum += residentBytes(pid)
			}
			mu.Lock()
			most, rss = max(most, len(pids)), max(rss, sum)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	end := time.Now().Add(d)
	rounds, created := 0, 0
	for time.Now().Before(end) {
		var ids []string
		for i := range per {
			id := read(send("tools/call", map[string]any{"name": "prompt_send", "arguments": map[string]any{"prompt": fmt.Sprintf("flood %d.%d", rounds, i)},
				"task": map[string]any{}}))
			var res struct {
				Task struct {
					TaskID string `json:"taskId"`
				} `json:"task"`
			}
			if raw, ok := id.Members["result"]; ok && json.Unmarshal(raw, &res) == nil && res.Task.TaskID != "" {
				ids = append(ids, res.Task.TaskID)
			}
		}
		created += len(ids)
		for _, id := range ids {
			read(send("tasks/cancel", map[string]any{"taskId": id}))
		}
		rounds++
	}
	close(stop)
	wg.Wait()
	t.Logf("%d rounds, %d tasks created and cancelled in %s", rounds, created, d)
	if created == 0 {
		t.Errorf("no task was created\nstderr:\n%s", stderr.String())
	}
	e2etest.Eventually(t, "the cancelled tasks' runners to be gone", time.Minute, func() bool { return len(in.runnersOfInstall()) == 0 })
	return most, rss
}

// residentBytes is pid's resident set (VmRSS), 0 if it is gone.
func residentBytes(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
