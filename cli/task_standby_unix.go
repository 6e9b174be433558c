//go:build unix

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/openprogram/openprogram/cli/host"
)

// runnerChannelName is where a runner reads its task from.
const runnerChannelName = "file descriptor 3"

// standbyFD is the runner's end of its connection to the `mcp serve` that
// started it: a Unix stream socket, the first of exec.Cmd.ExtraFiles.
const standbyFD = 3

// standby is the serve's end of a runner waiting for its task.
type standby struct {
	conn *net.UnixConn
	pid  int
}

// startStandby starts cmd with one end of a new socket pair as its file
// descriptor 3 and returns the other end; the process is reaped by this
// process while it lives, else by init.
func startStandby(cmd *exec.Cmd, _ *slog.Logger) (*standby, error) {
	fds, err := socketPair()
	if err != nil {
		return nil, fmt.Errorf("make the runner's connection: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(fds[0]), "task runner"), os.NewFile(uintptr(fds[1]), "mcp serve")
	defer mine.Close() // FileConn holds its own copy
	cmd.ExtraFiles = []*os.File{theirs}
	err = cmd.Start()
	theirs.Close() // the child has its own copy
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	go func() { _ = cmd.Wait() }()
	c, err := net.FileConn(mine)
	if err != nil {
		return nil, fmt.Errorf("the runner's connection: %w", err) // it reads the end and exits
	}
	return &standby{conn: c.(*net.UnixConn), pid: cmd.Process.Pid}, nil
}

// socketPair is a connected pair of Unix stream sockets, close-on-exec.
func socketPair() ([2]int, error) {
	syscall.ForkLock.RLock() // no process starts between the socket and its flag
	defer syscall.ForkLock.RUnlock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fds, err
	}
	syscall.CloseOnExec(fds[0])
	syscall.CloseOnExec(fds[1])
	return fds, nil
}

// hand gives the standby its task: one line "<client id> <task id>
// <runner>" (runner: the lease the task was created claimed for) with the
// runner slots' descriptors, which the runner holds from then on.
func (sb *standby) hand(clientID, taskID, runner string, held []*os.File) error {
	fds := make([]int, len(held))
	for i, f := range held {
		fds[i] = int(f.Fd())
	}
	_ = sb.conn.SetWriteDeadline(time.Now().Add(runnerSlotWait))
	if _, _, err := sb.conn.WriteMsgUnix(handoffLine(clientID, taskID, runner), syscall.UnixRights(fds...), nil); err != nil {
		return fmt.Errorf("hand task %s to runner %d: %w", taskID, sb.pid, err)
	}
	return nil
}

// waitEnd returns when the runner reports its task's end (true: it then
// waits for another task), or is gone (false: its connection is closed).
func (sb *standby) waitEnd() bool {
	var b [len(lineEnded)]byte
	_ = sb.conn.SetReadDeadline(time.Time{})
	if _, err := io.ReadFull(sb.conn, b[:]); err != nil || string(b[:]) != lineEnded {
		sb.conn.Close()
		return false
	}
	return true
}

// stay tells the runner that reported its task's end that it is the
// standby now: it gives its slots back and waits for the next task.
func (sb *standby) stay() error {
	_ = sb.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := sb.conn.Write([]byte(lineStay))
	return err
}

// close ends the connection: a standby not handed a task exits.
func (sb *standby) close() { _ = sb.conn.Close() }

// runnerConn is the runner's end of its connection to its `mcp serve`.
type runnerConn struct{ *net.UnixConn }

// receive waits for the next handoff (receiveTask).
func (c runnerConn) receive() handoff { return receiveTask(c.UnixConn) }

// hold: on Unix the runner slots come with the handoff.
func (runnerConn) hold(context.Context, *handoff, string, host.TasksConfig) error { return nil }

// decline: on Unix the serve expects no answer to a handoff; a task its
// runner runs no turn of is failed by the sweep.
func (runnerConn) decline(error) {}

// reportEnd tells the serve the runner's task ended.
func (c runnerConn) reportEnd() { reportEnd(c.UnixConn) }

// kept waits for the serve's answer to reportEnd (keptAsStandby).
func (c runnerConn) kept() bool { return keptAsStandby(c.UnixConn) }

// standbyConn is the runner's connection to its `mcp serve`.
func standbyConn() (runnerConn, error) {
	c, err := unixStandbyConn()
	return runnerConn{c}, err
}

// unixStandbyConn is file descriptor 3 as a Unix socket.
func unixStandbyConn() (*net.UnixConn, error) {
	f := os.NewFile(standbyFD, "mcp serve")
	if f == nil {
		return nil, errors.New("no file descriptor 3")
	}
	defer f.Close() // FileConn holds its own copy, close-on-exec
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errors.New("file descriptor 3 is not a Unix socket")
	}
	return uc, nil
}

// receiveTask waits for the handoff line and the runner slots that come
// with it. It refuses anything but exactly runnerSlots descriptors and a
// client id and task id of the expected form.
func receiveTask(conn *net.UnixConn) handoff {
	buf := make([]byte, maxHandoff)
	oob := make([]byte, syscall.CmsgSpace(4*(runnerSlots+1)))
	n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
	var h handoff
	if oobn > 0 {
		if h.slots, h.err = rights(oob[:oobn]); h.err != nil {
			return h
		}
	}
	switch {
	case n <= 0 && err == nil:
		n, err = 0, io.EOF
	case n <= 0: // -1 from a connection closed meanwhile
		n = 0
	case flags&syscall.MSG_CTRUNC != 0:
		err = errors.New("the runner slots were cut off")
	default:
		err = nil
	}
	for err == nil && !bytes.HasSuffix(buf[:n], []byte("\n")) {
		if n == len(buf) {
			err = errors.New("the handoff line is too long")
			break
		}
		var m int
		m, err = conn.Read(buf[n:])
		n += m
		if err == io.EOF && bytes.HasSuffix(buf[:n], []byte("\n")) {
			err = nil
		}
	}
	if err != nil {
		if n > 0 && errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		h.err = err
		return h
	}
	parsed, err := parseHandoff(buf[:n])
	if err != nil || len(h.slots) != runnerSlots {
		h.err = fmt.Errorf("%w (%d bytes, %d descriptors)", errMalformedHandoff, n, len(h.slots))
		return h
	}
	parsed.slots = h.slots
	return parsed
}

// rights returns the descriptors in a socket control message as files,
// close-on-exec: no process the turn starts inherits a slot.
func rights(oob []byte) ([]*os.File, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("read the runner slots: %w", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			syscall.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "runner slot"))
		}
	}
	return files, nil
}

// keptAsStandby waits for the serve's answer to reportEnd: true when it
// keeps the runner as its standby, false when it ended the connection.
// It reads exactly the answer, nothing of the next handoff.
func keptAsStandby(conn *net.UnixConn) bool {
	var b [len(lineStay)]byte
	_, err := io.ReadFull(conn, b[:])
	return err == nil && string(b[:]) == lineStay
}

// reportEnd tells the serve the runner's task ended; a serve that is gone
// is no error (the store holds the task's end).
func reportEnd(conn *net.UnixConn) {
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = conn.Write([]byte(lineEnded))
}
