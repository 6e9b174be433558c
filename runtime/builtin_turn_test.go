//go:build unix

package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/builtin"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/tool"
)

// An owner turn running the real bash tool: cancelling the turn kills the
// command's whole process group, children included.
func TestCancelKillsBashGroup(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	work := t.TempDir()
	reg := tool.NewRegistry()
	if err := builtin.Register(reg, builtin.Deps{Store: store, WorkDirs: []string{work}}); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(work, "child.pid")
	p := script(t, `{"turns":[{"tool_calls":[{"name":"bash","arguments":{"command":"sleep 60 & echo $! > child.pid; wait","timeout_ms":120000}}]},{"text":"never"}]}`)
	started := make(chan struct{}, 1)
	rt := runtime.New(runtime.Options{Store: store, Registry: reg, Provider: p})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-started
		// Wait until the child is running, then cancel the turn.
		for range 500 {
			if data, err := os.ReadFile(pidFile); err == nil && strings.TrimSpace(string(data)) != "" {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	req := runtime.TurnRequest{SessionID: "s1", Text: "run it", Speaker: owner(t, authz.Scope{Rules: allow(t, "bash"), WorkDirs: []string{work}}),
		Observe: func(e events.Event) {
			if e.Type == events.ToolStart {
				select {
				case started <- struct{}{}:
				default:
				}
			}
		}}
	start := time.Now()
	_, err := rt.ProcessUserTurn(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ProcessUserTurn error = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("turn took %s to stop", d)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the command never started: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("child process %d survived the cancelled turn", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	userOnly(t, store, "s1", "run it")
}

// allow is the permission rules allowing each tool named.
func allow(t testing.TB, tools ...string) authz.Rules {
	t.Helper()
	var rs []authz.Rule
	for _, name := range tools {
		rs = append(rs, authz.Rule{Tool: name, Action: authz.ActionAllow})
	}
	rules, err := authz.NewRules(rs...)
	if err != nil {
		t.Fatal(err)
	}
	return rules
}
