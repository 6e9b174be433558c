//go:build unix

package tasks

import (
	"fmt"
	"os"
	"path/filepath"
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
// processes of the install that run a task never exceed the client's cap,
// nor the host's mcp_server.tasks.max_runners when that is lower, and
// besides them there is at most the serve's one standby. It reports the
// most runners and their summed resident memory seen.
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
			most, all, rss := in.flood(t, floodDuration(t), c.bound)
			t.Logf("%s: at most %d live runners running a task (bound %d), %d with the standby, at most %.1f MiB resident in them", c.name, most, c.bound, all, float64(rss)/(1<<20))
			if most > c.bound {
				t.Errorf("%d live runner processes running a task at once, want at most %d", most, c.bound)
			}
			if all > c.bound+1 {
				t.Errorf("%d live runner processes at once, want at most %d and one standby", all, c.bound)
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
// `mcp serve` for d while it samples the install's live runner processes,
// and returns the most seen at once running a task (holding a runner slot),
// the most seen at all (the serve's standby included), and the most
// resident memory they held together.
func (in *install) flood(t *testing.T, d time.Duration, per int) (most, all int, rss int64) {
	c := in.serve(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			// Processes are read one after another, so one pass can see a
			// runner that has just let its slot go and the runner that took
			// it. A process seen alive (or holding a slot) in two passes
			// was so through the instant between them, so only those count:
			// what is counted was true at one instant.
			first, second := in.runnerSample(), in.runnerSample()
			var sum int64
			live, slotted := 0, 0
			for pid, held := range second {
				before, ok := first[pid]
				if !ok {
					continue
				}
				live++
				sum += residentBytes(pid)
				if held && before {
					slotted++
				}
			}
			mu.Lock()
			most, all, rss = max(most, slotted), max(all, live), max(rss, sum)
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
			if id := c.createTask(fmt.Sprintf("flood %d.%d", rounds, i)); id != "" {
				ids = append(ids, id)
			}
		}
		created += len(ids)
		for _, id := range ids {
			c.read(c.send("tasks/cancel", map[string]any{"taskId": id}))
		}
		rounds++
	}
	close(stop)
	wg.Wait()
	t.Logf("%d rounds, %d tasks created and cancelled in %s", rounds, created, d)
	if created == 0 {
		t.Errorf("no task was created\nstderr:\n%s", c.stderr.String())
	}
	c.close()
	e2etest.Eventually(t, "the cancelled tasks' runners and the standby to be gone", time.Minute, func() bool { return len(in.runnersOfInstall()) == 0 })
	return most, all, rss
}

// runnerSample reads the install's live runner processes one after
// another: whether each holds a runner slot.
func (in *install) runnerSample() map[int]bool {
	sample := map[int]bool{}
	for _, pid := range in.runnersOfInstall() {
		sample[pid] = in.holdsSlot(pid)
	}
	return sample
}

// holdsSlot reports whether process pid holds a runner slot of the
// install open (a runner handed a task).
func (in *install) holdsSlot(pid int) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	prefix := filepath.Join(in.Home, "runners") + string(filepath.Separator)
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, prefix) {
			return true
		}
	}
	return false
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
