//go:build windows

package bash

import (
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// procGroupID is the process tree the command runs in: a Job Object with
// kill-on-close that holds the shell, so that everything it starts (which
// inherits the job) ends with it.
type procGroupID struct {
	job  windows.Handle // 0 when no job could be made; then only the shell is killed
	proc *os.Process
}

// prepareGroup starts the command in a console process group of its own.
func prepareGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// startedGroup puts the started command into a new kill-on-close job. (A
// child the shell starts before it is assigned escapes the job: the window
// is the few instructions between CreateProcess and the assignment.)
func startedGroup(cmd *exec.Cmd) procGroupID {
	g := procGroupID{proc: cmd.Process}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return g
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return g
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		windows.CloseHandle(job)
		return g
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		windows.CloseHandle(job)
		return g
	}
	g.job = job
	return g
}

// close closes the job, which kills whatever is still in it.
func (g procGroupID) close() {
	if g.job != 0 {
		windows.CloseHandle(g.job)
	}
}

// killedBy reports nothing: Windows ends processes with exit codes.
func killedBy(*os.ProcessState) (string, bool) { return "", false }

// kill ends every process of the job (or the shell, without one).
func (g procGroupID) kill() {
	if g.job != 0 {
		_ = windows.TerminateJobObject(g.job, 1)
		return
	}
	_ = g.proc.Kill()
}

// alive reports whether a process of the job is still running.
func (g procGroupID) alive() bool {
	if g.job == 0 {
		return false
	}
	var info jobAccounting
	if err := windows.QueryInformationJobObject(g.job, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return false
	}
	return info.ActiveProcesses > 0
}

// terminate ends the whole tree at once (Windows has no SIGTERM to send a
// console program that is not attached to ours) and returns the shell's
// wait result.
func (b *bashTool) terminate(g procGroupID, waitDone <-chan error) error {
	g.kill()
	return <-waitDone
}

// reapGroup makes sure no process of the job survives, waiting a bounded
// time for the job to empty.
func (b *bashTool) reapGroup(g procGroupID) {
	if !g.alive() {
		return
	}
	g.kill()
	deadline := time.Now().Add(b.o.KillGrace)
	for g.alive() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION (x/sys has no
// type for it).
type jobAccounting struct {
	TotalUserTime, TotalKernelTime                       int64
	ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime   int64
	TotalPageFaultCount, TotalProcesses, ActiveProcesses uint32
	TotalTerminatedProcesses                             uint32
}
