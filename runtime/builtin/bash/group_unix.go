//go:build unix

package bash

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procGroupID is the process group the command runs in: its shell's pid.
type procGroupID int

// prepareGroup makes the command the leader of a process group of its own.
func prepareGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// startedGroup returns the group of the started command (it cannot fail
// on Unix: the group exists from the start).
func startedGroup(cmd *exec.Cmd) (procGroupID, error) { return procGroupID(cmd.Process.Pid), nil }

// close releases nothing on Unix.
func (procGroupID) close() {}

// killedBy reports the signal that ended the process, if one did.
func killedBy(ps *os.ProcessState) (string, bool) {
	if ps == nil {
		return "", false
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return "", false
	}
	return ws.Signal().String(), true
}

// terminate sends SIGTERM to the group, SIGKILL after the grace period,
// and returns the shell's wait result.
func (b *bashTool) terminate(pgid procGroupID, waitDone <-chan error) error {
	_ = syscall.Kill(-int(pgid), syscall.SIGTERM)
	grace := time.NewTimer(b.o.KillGrace)
	defer grace.Stop()
	select {
	case err := <-waitDone:
		return err
	case <-grace.C:
	}
	_ = syscall.Kill(-int(pgid), syscall.SIGKILL)
	return <-waitDone
}

// reapGroup makes sure no process of the group survives: SIGTERM, a grace
// period, then SIGKILL, then a bounded wait until the group is gone.
func (b *bashTool) reapGroup(pgid procGroupID) {
	if !groupAlive(pgid) {
		return
	}
	_ = syscall.Kill(-int(pgid), syscall.SIGTERM)
	if waitGone(pgid, b.o.KillGrace) {
		return
	}
	_ = syscall.Kill(-int(pgid), syscall.SIGKILL)
	waitGone(pgid, b.o.KillGrace)
}

func waitGone(pgid procGroupID, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !groupAlive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// groupAlive reports whether a live (non-zombie) process is in the group.
// It scans /proc, because orphaned zombies stay in the group until their
// new parent reaps them and kill(-int(pgid), 0) counts them; without /proc it
// falls back to kill(-int(pgid), 0).
func groupAlive(pgid procGroupID) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return syscall.Kill(-int(pgid), 0) == nil
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		pg, state, ok := procGroup(pid)
		if ok && pg == int(pgid) && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// procGroup reads the process group and state of pid from /proc/<pid>/stat.
func procGroup(pid int) (pgid int, state byte, ok bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 3 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(f[2])
	if err != nil || len(f[0]) == 0 {
		return 0, 0, false
	}
	return pg, f[0][0], true
}
