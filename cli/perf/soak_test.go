//go:build linux

package perf

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// soakTurnsEnv names the number of turns of TestSoakOneSession; unset, the
// soak does not run (it takes minutes).
const soakTurnsEnv = "OPENPROGRAM_SOAK_TURNS"

// soakLimitKiB stops the soak once the server's resident set passes it,
// so a server that grows with every turn cannot take the machine down.
const soakLimitKiB = 1024 << 10

// TestSoakOneSession runs $OPENPROGRAM_SOAK_TURNS prompt_sends (e.g. 5000)
// on one session of one `openprogram mcp serve` with the scripted model and
// the default configuration (the whole session sent each turn, as `make
// run` does), and logs the server's resident set every 500 turns and its
// peak (VmHWM) at the end. It asserts nothing about either: it reports.
//
//	cd cli && OPENPROGRAM_SOAK_TURNS=5000 GOWORK=off go test -run TestSoakOneSession -v -timeout 1h ./perf/
func TestSoakOneSession(t *testing.T) {
	turns, err := strconv.Atoi(os.Getenv(soakTurnsEnv))
	if err != nil || turns <= 0 {
		t.Skipf("set %s to the number of turns to run the soak", soakTurnsEnv)
	}
	bin := binary(t)
	st := newState(t, filepath.Join(t.TempDir(), "state"), tinyScript)
	p, _ := startRaw(t, bin, st, initializeLine)
	defer p.close(t)
	p.initialize(t)
	pid := p.cmd.Process.Pid
	sid := promptSend(t, p, 1, "", "hello")
	for i := 2; i <= turns; i++ {
		promptSend(t, p, i, sid, "one more turn, please")
		if i%500 != 0 && i != turns {
			continue
		}
		s, err := procStatus(pid, "VmRSS", "VmHWM")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("turn %d: RSS %d MiB, peak %d MiB", i, s["VmRSS"]>>10, s["VmHWM"]>>10)
		if s["VmRSS"] > soakLimitKiB {
			t.Fatalf("turn %d: the server's resident set passed %d MiB; stopped", i, soakLimitKiB>>10)
		}
	}
}
