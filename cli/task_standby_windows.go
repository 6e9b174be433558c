//go:build windows

package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"golang.org/x/sys/windows"

	"github.com/openprogram/openprogram/cli/host"
)

// runnerChannelName is where a runner reads its task from: Windows passes
// no socket to a child, so its stdin (serve to runner) and stdout (runner
// to serve) are its channel, and stderr alone its log.
const runnerChannelName = "its stdin"

// standby is the serve's end of a runner waiting for its task: a pipe to
// its stdin and one from its stdout.
type standby struct {
	to       *os.File      // the runner's stdin
	from     *bufio.Reader // the runner's stdout, fromFile
	fromFile *os.File
	proc     *os.Process
	pid      int
}

// handAnswerWait bounds how long a handoff waits for the runner's answer:
// a runner started for the task opens its host first, then waits up to
// runnerSlotWait for its slots.
const handAnswerWait = runnerSlotWait + time.Minute

// breakawayDenied is set once a runner could not be started out of the
// client's job: the job forbids it, and every later runner starts in it.
var breakawayDenied atomic.Bool

// startStandby starts cmd with a pipe as its stdin and one as its stdout
// and returns their other ends; the process is waited for by this process
// while it lives. When the client's job forbids its processes to break
// away, the runner starts in that job (logged once: tasks then end with
// the client's job).
func startStandby(cmd *exec.Cmd, log *slog.Logger) (*standby, error) {
	toR, toW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("make the runner's stdin: %w", err)
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		toR.Close()
		toW.Close()
		return nil, fmt.Errorf("make the runner's stdout: %w", err)
	}
	// This process's ends are not inherited, by the runner or any other
	// child: a runner holding its own stdin's writer would never read the
	// end. (Go passes a child only the handles it names; a system that
	// ignores that list, such as Wine, would pass every inheritable one.)
	for _, f := range []*os.File{toW, fromR} {
		if err := windows.SetHandleInformation(windows.Handle(f.Fd()), windows.HANDLE_FLAG_INHERIT, 0); err != nil {
			toR.Close()
			toW.Close()
			fromR.Close()
			fromW.Close()
			return nil, fmt.Errorf("make the runner's pipes private: %w", err)
		}
	}
	cmd.Stdin, cmd.Stdout = toR, fromW
	cmd, err = startDetached(cmd, log)
	toR.Close() // the child has its own copies
	fromW.Close()
	if err != nil {
		toW.Close()
		fromR.Close()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() { _ = cmd.Wait() }()
	return &standby{to: toW, from: bufio.NewReader(fromR), fromFile: fromR, proc: cmd.Process, pid: cmd.Process.Pid}, nil
}

// startDetached starts cmd, out of the client's job unless that job
// forbids it (ERROR_ACCESS_DENIED): then it starts a copy of cmd in the
// job and returns the copy.
func startDetached(cmd *exec.Cmd, log *slog.Logger) (*exec.Cmd, error) {
	const breakaway = windows.CREATE_BREAKAWAY_FROM_JOB
	if cmd.SysProcAttr != nil && breakawayDenied.Load() {
		cmd.SysProcAttr.CreationFlags &^= breakaway
	}
	err := cmd.Start()
	if err == nil || cmd.SysProcAttr == nil || cmd.SysProcAttr.CreationFlags&breakaway == 0 || !errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		return cmd, err
	}
	if breakawayDenied.CompareAndSwap(false, true) {
		log.Warn("the client's job does not let task runners break away: a task ends when the client's job ends", "error", err.Error())
	}
	again := exec.Command(cmd.Path, cmd.Args[1:]...)
	again.Env, again.Dir, again.Stdin, again.Stdout, again.Stderr = cmd.Env, cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr
	attr := *cmd.SysProcAttr
	attr.CreationFlags &^= breakaway
	again.SysProcAttr = &attr
	return again, again.Start()
}

// hand gives the standby its task, one line "<client id> <task id>
// <runner>", and returns once the runner holds its runner slots ("took"),
// or with an error wrapping errRunnerDeclined when it takes none in time
// (it then exits), or another when it is gone. The runner takes its slots
// itself: held is always empty on Windows.
func (sb *standby) hand(clientID, taskID, runner string, _ []*os.File) error {
	if _, err := sb.to.Write(handoffLine(clientID, taskID, runner)); err != nil {
		return fmt.Errorf("hand task %s to runner %d: %w", taskID, sb.pid, err)
	}
	answer := make(chan error, 1)
	go func() { answer <- tookAnswer(readLine(sb.from)) }()
	t := time.NewTimer(handAnswerWait)
	defer t.Stop()
	select {
	case err := <-answer:
		if err != nil {
			return fmt.Errorf("hand task %s to runner %d: %w", taskID, sb.pid, err)
		}
		return nil
	case <-t.C:
		if sb.proc != nil {
			_ = sb.proc.Kill() // its stdout ends: the read above returns
		}
		return fmt.Errorf("hand task %s to runner %d: %w: it did not answer within %s", taskID, sb.pid, errRunnerDeclined, handAnswerWait)
	}
}

// waitEnd returns when the runner reports its task's end (true: it then
// waits for another task), or is gone (false: its pipes are closed).
func (sb *standby) waitEnd() bool {
	if line, err := readLine(sb.from); err != nil || string(line) != lineEnded {
		sb.close()
		return false
	}
	return true
}

// stay tells the runner that reported its task's end that it is the
// standby now: it gives its slots back and waits for the next task.
func (sb *standby) stay() error {
	_, err := sb.to.Write([]byte(lineStay))
	return err
}

// close ends the runner's stdin: a standby not handed a task exits.
func (sb *standby) close() {
	_ = sb.to.Close()
	_ = sb.fromFile.Close()
}

// runnerConn is the runner's end of its channel to its `mcp serve`: its
// stdin and stdout.
type runnerConn struct {
	in  *bufio.Reader // its stdin
	out *os.File
}

// standbyConn is the runner's channel to its `mcp serve`, which starts it
// with pipes as its stdin and stdout.
func standbyConn() (runnerConn, error) {
	if t, err := windows.GetFileType(windows.Handle(os.Stdin.Fd())); err != nil || t != windows.FILE_TYPE_PIPE {
		return runnerConn{}, errors.New("stdin is not a pipe")
	}
	return runnerConn{in: bufio.NewReader(os.Stdin), out: os.Stdout}, nil
}

// receive waits for the next handoff line; io.EOF when the serve went
// away (its end of the runner's stdin closed).
func (c runnerConn) receive() handoff {
	line, err := readLine(c.in)
	if err != nil {
		return handoff{err: err}
	}
	h, err := parseHandoff(line)
	if err != nil {
		return handoff{err: fmt.Errorf("%w (%d bytes)", err, len(line))}
	}
	return h
}

// hold takes the runner slots of the task hd hands this runner (the
// serve hands no other task meanwhile), waiting up to runnerSlotWait, and
// answers the serve: "took", or why not ("failed ...") and an error.
func (c runnerConn) hold(ctx context.Context, hd *handoff, stateDir string, tc host.TasksConfig) error {
	held, err := takeRunnerSlots(ctx, stateDir, hd.client, tc.MaxWorking, tc.MaxRunners)
	if err != nil {
		c.decline(err)
		return err
	}
	if _, err := c.out.Write([]byte(lineTook)); err != nil {
		for _, f := range held {
			f.Close()
		}
		return fmt.Errorf("tell mcp serve the runner holds its slots: %w", err)
	}
	hd.slots = held
	return nil
}

// decline tells the serve the runner runs no turn of the task it was
// handed, and why.
func (c runnerConn) decline(why error) { _, _ = c.out.Write(failedLine(why)) }

// reportEnd tells the serve the runner's task ended; a serve that is gone
// is no error (the store holds the task's end).
func (c runnerConn) reportEnd() { _, _ = c.out.Write([]byte(lineEnded)) }

// kept waits for the serve's answer to reportEnd: true when it keeps the
// runner as its standby, false when it ended the runner's stdin.
func (c runnerConn) kept() bool {
	line, err := readLine(c.in)
	return err == nil && string(line) == lineStay
}

// Close ends the runner's stdout: the serve reads the end. Its stdin is
// left to the process's exit (closing a pipe waits for a read of it in
// progress).
func (c runnerConn) Close() error { return c.out.Close() }
