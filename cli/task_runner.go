package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/cli/internal/slots"
	"github.com/openprogram/openprogram/internal/privatefile"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/tokenauth"
)

// TaskLogFileName is the log file the detached task runners append to, in
// the state directory (mode 0600).
const TaskLogFileName = "mcp-tasks.log"

// taskSpawner starts the detached runners of durable MCP tasks: this same
// binary as `openprogram mcp run-task`, in a session of its own
// (no signal meant for the `mcp serve` that started it, or for that
// process's group, reaches it), stdin /dev/null, stdout and stderr appended
// to TaskLogFileName (on Windows stdin and stdout are its channel). Its
// environment is the one `mcp serve` runs with, which the host needs (the
// model's key, the variables model.headers names, the store override),
// with the state directory fixed and without the client's token: the
// runner is no client, and reads the task's client from the store. Nothing secret goes into argv, which other users can
// read.
//
// A runner starts as a standby: it opens its host and waits on a
// connection to this process (task_channel.go; a Unix socket, its file
// descriptor 3, or on Windows its stdin and stdout) for
// the task it is to run. This process keeps at most one standby, from its
// first task on, so that a task's turn starts without a process start and
// a host open; a standby whose `mcp serve` goes away exits. When the task
// is terminal, the runner says so on the connection, which wakes what
// waits for the task here (host.Options.TaskEnded); once its turn is
// over, this process keeps it as the standby if it has none, else ends its
// connection and it exits.
//
// Every runner running a task holds two slots (cli/internal/slots): one of
// its client's maxWorking and one of the state directory's maxRunners.
// They are taken before the runner reads its task, waiting up to
// runnerSlotWait for the runners of cancelled or finished tasks to let
// theirs go (on Unix by this process, and passed with the task; on Windows,
// which passes no locked file to a child, by the runner, while this
// process hands no other task); the runner holds them until it exits, or
// until it is kept as the standby after its turn is over. So the runners
// running a task never exceed either bound, whatever the clients do and
// however many `mcp serve` processes start them. A standby holds none and runs no turn.
type taskSpawner struct {
	exe       string   // the openprogram binary, absolute
	stateDir  string   // absolute
	env       []string // the serve process's environment
	logLevel  string
	logFormat string
	// maxWorking and maxRunners are mcp_server.tasks.max_working and
	// max_runners.
	maxWorking, maxRunners int
	logger                 *slog.Logger
	// after runs f once d has passed (nil: time.AfterFunc); tests fire it
	// by hand.
	after func(d time.Duration, f func())

	mu      sync.Mutex
	standby *standby // the warm runner, nil until the first task
	// place is the standby slot this process holds while it keeps standby:
	// one of max_runners per state directory, so idle runners are bounded
	// per host, not only per serve.
	place  *os.File
	ends   map[string]chan struct{} // of the tasks handed and not yet reported
	closed bool
}

// runnerSlotWait bounds how long a task's creation waits for a runner
// slot: a cancelled task's runner stops within a second.
const runnerSlotWait = 10 * time.Second

// takeRunnerSlots takes the runner slots of a task of clientID in
// stateDir, waiting up to runnerSlotWait: one of its client's maxWorking,
// then one of the state directory's maxRunners (0: the defaults).
func takeRunnerSlots(ctx context.Context, stateDir, clientID string, maxWorking, maxRunners int) ([]*os.File, error) {
	ctx, cancel := context.WithTimeout(ctx, runnerSlotWait)
	defer cancel()
	dir := filepath.Join(stateDir, slots.DirName)
	working, runners := cmp.Or(maxWorking, mcpserver.DefaultTaskMaxWorking), cmp.Or(maxRunners, host.DefaultTaskMaxRunners)
	mine, err := slots.Acquire(ctx, dir, "client-"+clientID, working)
	if err != nil {
		return nil, fmt.Errorf("start the task runner: %d runners of this client still run: %w", working, err)
	}
	all, err := slots.Acquire(ctx, dir, "host", runners)
	if err != nil {
		mine.Close()
		return nil, fmt.Errorf("start the task runner: %d runners (mcp_server.tasks.max_runners) still run: %w", runners, err)
	}
	return []*os.File{mine, all}, nil
}

// start hands task id of the client with clientID to a runner and returns
// once the runner has it: the standby this process keeps warm (its host
// open, waiting for a task), or, when there is none (the first task of
// this process, a standby that died, or one handed a task already), one
// started now. The runner comes to hold the task's runner slots before it
// reads the task (beforeHandoff: on Unix they are taken here first and
// passed with the task; on Windows the runner takes them and answers).
// A runner whose turn is over within standbyAfter comes back as the
// standby; otherwise a new one is started then. It has the signature of
// host.Options.StartTask.
func (s *taskSpawner) start(ctx context.Context, clientID, id, runner string) error {
	if !filepath.IsAbs(s.exe) {
		return errors.New("start the task runner: the path of the openprogram binary is unknown")
	}
	held, done, err := s.beforeHandoff(ctx, clientID)
	if err != nil {
		return err
	}
	defer done()
	ended := s.track(id)
	var sb *standby
	for attempt := range 2 {
		if sb, err = s.takeStandby(); err != nil {
			break
		}
		if err = sb.hand(clientID, id, runner, held); err == nil {
			break
		}
		sb.close()
		if errors.Is(err, errRunnerDeclined) {
			break // a live runner said why it runs no turn
		}
		if attempt == 0 {
			s.log().Warn("the standby task runner is gone; starting another", "pid", sb.pid, "error", err)
		}
	}
	if err != nil {
		s.untrack(id)
		return fmt.Errorf("start the task runner: %w", err)
	}
	go s.follow(sb, id, ended)
	// A turn that lasts gets a standby beside it for the next task; a short
	// one's runner comes back as the standby, and its timer starts none (a
	// standby started while a later task runs would replace the runner
	// coming back, at the cost of a process start and a host open).
	s.afterFunc(standbyAfter, func() {
		select {
		case <-ended:
		default:
			s.keepStandby()
		}
	})
	return nil
}

// afterFunc runs f once d has passed (s.after, or time.AfterFunc).
func (s *taskSpawner) afterFunc(d time.Duration, f func()) {
	if s.after != nil {
		s.after(d, f)
		return
	}
	time.AfterFunc(d, f)
}

// standbyAfter is how long a handed task's runner may take to come back as
// the standby before another is started.
const standbyAfter = time.Second

// follow waits for the runner sb of task id to report the task's end,
// keeps the runner as the standby when there is none (it then gives its
// slots back: its turn is over), else ends its connection, and it exits
// with its slots; then it closes ended. The standby is kept first: what
// ended wakes (tasks/result) answers the client, whose next task then
// finds it.
func (s *taskSpawner) follow(sb *standby, id string, ended chan struct{}) {
	if sb.waitEnd() {
		s.keep(sb)
	}
	close(ended)
	s.untrack(id)
}

// keep keeps sb, whose task ended, as the standby when there is none, else
// ends its connection.
func (s *taskSpawner) keep(sb *standby) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.standby == nil && !s.closed && s.takePlace() {
		if sb.stay() == nil {
			s.standby = sb
			return
		}
		s.dropPlace()
	}
	sb.close()
}

// log is where the spawner reports what goes wrong beside a task.
func (s *taskSpawner) log() *slog.Logger {
	if s.logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.logger
}

// track returns the channel closed when task id's runner reports its end.
func (s *taskSpawner) track(id string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ends == nil {
		s.ends = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	s.ends[id] = ch
	return ch
}

func (s *taskSpawner) untrack(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ends, id)
}

// ended returns the channel closed when the runner this process handed
// task id to reports the task's end (host.Options.TaskEnded), or nil for
// a task it did not hand or whose runner reported already.
func (s *taskSpawner) ended(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.ends[id]; ok {
		return ch
	}
	return nil
}

// takeStandby returns the standby, which it no longer keeps (its standby
// slot goes back: it is a task's runner now), or a runner started now when
// there is none.
func (s *taskSpawner) takeStandby() (*standby, error) {
	s.mu.Lock()
	sb := s.standby
	s.standby = nil
	s.dropPlace()
	s.mu.Unlock()
	if sb != nil {
		return sb, nil
	}
	return s.launch()
}

// keepStandby starts the standby when there is none: at most one per
// process, none before its first task (a server whose clients never
// create one starts no runner), and none while every standby slot of the
// state directory is held by other processes' standbys.
func (s *taskSpawner) keepStandby() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.standby != nil || s.closed || !s.takePlace() {
		return
	}
	sb, err := s.launch()
	if err != nil {
		s.dropPlace()
		s.log().Warn("start the standby task runner; the next task starts its own", "error", err)
		return
	}
	s.standby = sb
}

// takePlace takes one of the state directory's max_runners standby slots
// for the standby this process is about to keep, without waiting; false
// when all are held (this process then keeps none). Called with s.mu held.
func (s *taskSpawner) takePlace() bool {
	if s.place != nil {
		return true
	}
	now, cancel := context.WithCancel(context.Background())
	cancel() // one try, no wait
	f, err := slots.Acquire(now, filepath.Join(s.stateDir, slots.DirName), "standby", cmp.Or(s.maxRunners, host.DefaultTaskMaxRunners))
	if err != nil {
		if !errors.Is(err, slots.ErrFull) {
			s.log().Warn("take a standby slot; no standby task runner is kept", "error", err)
		}
		return false
	}
	s.place = f
	return true
}

// dropPlace gives the standby slot back. Called with s.mu held.
func (s *taskSpawner) dropPlace() {
	if s.place != nil {
		s.place.Close()
		s.place = nil
	}
}

// close ends the standby (it exits when it reads the end of its
// connection) and starts no other. Handed runners are not touched.
func (s *taskSpawner) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.standby != nil {
		s.standby.close()
		s.standby = nil
	}
	s.dropPlace()
}

// launch starts a runner process that waits, its host open, for the task
// it is handed (`openprogram mcp run-task`), in a session of its
// own, stdin the null device, stdout and stderr appended to the task log.
func (s *taskSpawner) launch() (*standby, error) {
	log, err := privatefile.OpenAppend(filepath.Join(s.stateDir, TaskLogFileName))
	if err != nil {
		return nil, fmt.Errorf("open the task log: %w", err)
	}
	defer log.Close() // the child has its own copy
	// Not CommandContext: the runner must outlive the request, the
	// connection and this process.
	cmd := exec.Command(s.exe, "mcp", "run-task", "--log-level", s.logLevel, "--log-format", s.logFormat)
	cmd.Env = runnerEnv(s.env, s.stateDir)
	cmd.Dir = filepath.VolumeName(s.stateDir) + string(filepath.Separator)
	cmd.Stdin = nil // the null device
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = detached()
	return startStandby(cmd, s.log())
}

// handoff is what a standby runner is handed.
type handoff struct {
	client, task string
	runner       string     // the lease the task was created claimed for
	slots        []*os.File // held until the process exits
	err          error      // io.EOF: the serve went away without a task
}

// runnerEnv is env without the MCP token and with the state directory
// given by OPENPROGRAM_HOME alone (the profile and the flag it came from are
// resolved already).
func runnerEnv(env []string, stateDir string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case tokenauth.EnvVar, EnvHome, EnvProfile:
			continue
		}
		out = append(out, kv)
	}
	return append(out, EnvHome+"="+stateDir)
}
