//go:build windows

package bash

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// procGroupID is the process tree the command runs in: a Job Object with
// kill-on-close that holds the shell from before its first instruction, so
// that everything it starts (which inherits the job) ends with it.
type procGroupID struct {
	job  windows.Handle
	proc *os.Process
}

// prepareGroup creates the command suspended, in a console process group
// of its own: it runs no instruction before startedGroup has put it in its
// job.
func prepareGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED}
}

// startedGroup puts the started (suspended) command into a new
// kill-on-close job and then lets it run, so that nothing it starts can
// be outside the job. When any step fails the command is killed before it
// ran and the error says which step.
func startedGroup(cmd *exec.Cmd) (procGroupID, error) {
	g := procGroupID{proc: cmd.Process}
	fail := func(step string, err error) (procGroupID, error) {
		if g.job != 0 {
			windows.CloseHandle(g.job)
		}
		_ = cmd.Process.Kill()
		return procGroupID{}, fmt.Errorf("%s: %w", step, err)
	}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fail("create a job object", err)
	}
	g.job = job
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return fail("set the job's kill-on-close limit", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
	if err != nil {
		return fail("open the command's process", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		return fail("assign the command to its job", err)
	}
	if err := resume(uint32(cmd.Process.Pid)); err != nil {
		return fail("resume the command", err)
	}
	return g, nil
}

// resume starts the threads of the suspended process pid (os/exec closes
// the thread handle CreateProcess gave, so they are found by a snapshot).
func resume(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != pid {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return err
		}
		resumed++
	}
	if resumed == 0 {
		return errors.New("no thread of the process was found")
	}
	return nil
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
