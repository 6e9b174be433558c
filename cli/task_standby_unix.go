//go:build unix

package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// standbyFD is the runner's end of its connection to the `mcp serve` that
// started it: a Unix stream socket, the first of exec.Cmd.ExtraFiles.
const standbyFD = 3

// maxHandoff bounds the handoff line: a client id, a task id and a
// runner, spaces between, and a newline.
const maxHandoff = 256

// standby is the serve's end of a runner waiting for its task.
type standby struct {
	conn *net.UnixConn
	pid  int
}

// startStandby starts cmd with one end of a new socket pair as its file
// descriptor 3 and returns the other end; the process is reaped by this
// process while it lives, else by init.
func startStandby(cmd *exec.Cmd) (*standby, error) {
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
	if _, _, err := sb.conn.WriteMsgUnix([]byte(clientID+" "+taskID+" "+runner+"\n"), syscall.UnixRights(fds...), nil); err != nil {
		return fmt.Errorf("hand task %s to runner %d: %w", taskID, sb.pid, err)
	}
	return nil
}

// waitEnd returns when the runner reports its task's end (true: it then
// waits for another task), or is gone (false: its connection is closed).
func (sb *standby) waitEnd() bool {
	var b [len("ended\n")]byte
	_ = sb.conn.SetReadDeadline(time.Time{})
	if _, err := io.ReadFull(sb.conn, b[:]); err != nil || string(b[:]) != "ended\n" {
		sb.conn.Close()
		return false
	}
	return true
}

// stay tells the runner that reported its task's end that it is the
// standby now: it gives its slots back and waits for the next task.
func (sb *standby) stay() error {
	_ = sb.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := sb.conn.Write([]byte("stay\n"))
	return err
}

// close ends the connection: a standby not handed a task exits.
func (sb *standby) close() { _ = sb.conn.Close() }

// standbyConn is the runner's connection to its `mcp serve`.
func standbyConn() (*net.UnixConn, error) {
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
	case n == 0 && err == nil:
		err = io.EOF
	case n == 0:
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
	client, rest, ok := bytes.Cut(bytes.TrimSuffix(buf[:n], []byte("\n")), []byte(" "))
	task, runner, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok || !ok2 || !handoffID(client, 16) || !handoffID(task, 64) || !handoffID(runner, 64) || len(h.slots) != runnerSlots {
		h.err = fmt.Errorf("a malformed handoff (%d bytes, %d descriptors)", n, len(h.slots))
		return h
	}
	h.client, h.task, h.runner = string(client), string(task), string(runner)
	return h
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

// handoffID reports whether b is 1 to max bytes of [A-Za-z0-9_-].
func handoffID(b []byte, max int) bool {
	if len(b) == 0 || len(b) > max {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// keptAsStandby waits for the serve's answer to reportEnd: true when it
// keeps the runner as its standby, false when it ended the connection.
// It reads exactly the answer, nothing of the next handoff.
func keptAsStandby(conn *net.UnixConn) bool {
	var b [len("stay\n")]byte
	_, err := io.ReadFull(conn, b[:])
	return err == nil && string(b[:]) == "stay\n"
}

// reportEnd tells the serve the runner's task ended; a serve that is gone
// is no error (the store holds the task's end).
func reportEnd(conn *net.UnixConn) {
	_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = conn.Write([]byte("ended\n"))
}
