package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A runner whose host does not open (here: its state directory's
// config.json is not JSON) exits at once, before it is handed a task: it
// is not a standby that takes the next task only to drop it, leaving the
// task to wait for the sweep. Its serve finds it gone, and a handoff to it
// fails (so the serve starts another runner).
func TestRunnerWhoseHostDidNotOpenExits(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "config.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb, conn := runnerPair(t)
	log := &strings.Builder{} // read once serve returned: nothing writes it then
	app := &App{Stdin: strings.NewReader(""), Stdout: log, Stderr: log, Env: Env{EnvHome + "=" + state}, Version: "test"}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	exited := make(chan error, 1)
	go func() { exited <- mcpRunTaskCmd{LogLevel: "debug", LogFormat: "text"}.serve(ctx, app, conn) }()
	select {
	case err := <-exited:
		if err == nil {
			t.Error("the runner whose host did not open exited without an error")
		}
	case <-time.After(time.Minute):
		cancel()
		sb.close()
		<-exited
		t.Fatalf("the runner whose host did not open still waits for a task after a minute; its log:\n%s", log.String())
	}
	if !strings.Contains(log.String(), "its host did not open") {
		t.Errorf("the runner's log does not say why it exited:\n%s", log.String())
	}
	if err := sb.hand("0123456789abcdef", "task_1", "R1", nil); err == nil {
		t.Error("a task was handed to the runner that exited")
	}
	if sb.waitEnd() {
		t.Error("the serve read a task's end from a runner that ran none")
	}
}
