//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
)

// chatSession is one `openprogram chat` run under a pseudo-terminal.
type chatSession struct {
	t      *testing.T
	cmd    *exec.Cmd
	tty    *os.File // the pty's controlling side: what the person types
	out    *e2etest.LockedBuffer
	mark   int // expect searches the output from here
	exited chan struct{}
}

// chat starts `openprogram chat args...` with its stdin and controlling
// terminal a fresh pty. With ttyStdout its stdout (and stderr) is the pty
// too; otherwise stdout is a pipe, as when the output is redirected.
func chat(in *e2etest.Install, ttyStdout bool, extraEnv []string, args ...string) *chatSession {
	in.T.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		in.T.Fatalf("open a pty: %v", err)
	}
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 200}); err != nil {
		in.T.Fatalf("size the pty: %v", err)
	}
	cs := &chatSession{t: in.T, tty: ptmx, out: &e2etest.LockedBuffer{}, exited: make(chan struct{})}
	cs.cmd = exec.Command(e2etest.BinPath, append([]string{"chat"}, args...)...)
	cs.cmd.Env = in.Env(append([]string{"TERM=xterm"}, extraEnv...)...)
	cs.cmd.Stdin, cs.cmd.Stderr = tty, tty
	var copies sync.WaitGroup
	if ttyStdout {
		cs.cmd.Stdout = tty
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			in.T.Fatalf("stdout pipe: %v", err)
		}
		cs.cmd.Stdout = w
		defer w.Close()
		copies.Go(func() { _, _ = io.Copy(cs.out, r); r.Close() })
	}
	cs.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cs.cmd.Start(); err != nil {
		in.T.Fatalf("start openprogram chat: %v", err)
	}
	tty.Close()
	echo := io.Writer(io.Discard)
	if ttyStdout {
		echo = cs.out
	}
	copies.Go(func() { _, _ = io.Copy(echo, ptmx) }) // ends with EIO once the child is gone
	go func() {
		_ = cs.cmd.Wait()
		copies.Wait()
		close(cs.exited)
	}()
	in.T.Cleanup(func() {
		select {
		case <-cs.exited:
		default:
			_ = cs.cmd.Process.Kill()
			<-cs.exited
		}
		ptmx.Close()
		e2etest.CheckStderr(in.T, "openprogram chat", cs.out.String())
	})
	return cs
}

// expect waits (bounded) for want in the output after the last match.
func (cs *chatSession) expect(want string) {
	cs.t.Helper()
	cs.expectMatch(regexp.MustCompile("()" + regexp.QuoteMeta(want)))
}

// expectMatch waits for re and returns its first submatch.
func (cs *chatSession) expectMatch(re *regexp.Regexp) string {
	cs.t.Helper()
	deadline := time.Now().Add(e2etest.TestTimeout)
	for {
		out := cs.out.String()
		if m := re.FindStringSubmatchIndex(out[cs.mark:]); m != nil {
			got := out[cs.mark+m[2] : cs.mark+m[3]]
			cs.mark += m[1]
			return got
		}
		if time.Now().After(deadline) {
			cs.t.Fatalf("waiting for %s in the chat output; after the last match it is:\n%q", re, out[cs.mark:])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// send types s (use "\r" for Enter, "\x03" for Ctrl-C, "\x04" for Ctrl-D).
func (cs *chatSession) send(s string) {
	cs.t.Helper()
	if _, err := cs.tty.Write([]byte(s)); err != nil {
		cs.t.Fatalf("type %q: %v", s, err)
	}
}

// wait waits for the chat to exit and returns its exit status.
func (cs *chatSession) wait() int {
	cs.t.Helper()
	select {
	case <-cs.exited:
	case <-time.After(e2etest.ExitTimeout):
		cs.t.Fatalf("openprogram chat did not exit; output:\n%q", cs.out.String())
	}
	return cs.cmd.ProcessState.ExitCode()
}

// exitsOK waits for the chat to exit and requires status 0.
func (cs *chatSession) exitsOK() {
	cs.t.Helper()
	if code := cs.wait(); code != 0 {
		cs.t.Errorf("chat exit = %d, want 0", code)
	}
}

var newSessionLine = regexp.MustCompile(`New session (cli_[0-9a-f]{32})`)

// sgr matches a colour or text-style escape sequence.
var sgr = regexp.MustCompile("\x1b\\[[0-9;]*m")

// branchOf returns the active branch of a session, read with the CLI.
func branchOf(in *e2etest.Install, id string) []map[string]any {
	in.T.Helper()
	out := in.MustRun("sessions", "show", "--json", id)
	var msgs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSuffix(out, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			in.T.Fatalf("sessions show --json line %q: %v", line, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// toolMessages returns the content of the tool messages of a branch.
func toolMessages(branch []map[string]any) []string {
	var out []string
	for _, m := range branch {
		if m["role"] == "tool" {
			out = append(out, m["content"].(string))
		}
	}
	return out
}

// workDir makes a working directory for the install and configures it.
func workDir(in *e2etest.Install) string {
	in.T.Helper()
	dir := filepath.Join(in.Root, "work")
	if err := os.Mkdir(dir, 0o700); err != nil {
		in.T.Fatal(err)
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		in.T.Fatal(err)
	}
	in.SetJSON("agent.work_dirs", []string{resolved})
	return resolved
}

func TestChatApprovalAllowOnceWrites(t *testing.T) {
	t.Parallel()
	in := e2etest.NewBareInstall(t, e2etest.SQLite)
	work := workDir(in)
	note := filepath.Join(work, "note.txt")
	in.Script(e2etest.Calls("writing", e2etest.ToolCall("write", map[string]any{"path": note, "content": "secret-hello"})), e2etest.Say("wrote the note"))

	cs := chat(in, true, nil)
	cs.expect("you> ")
	cs.send("write a note\r")
	sid := cs.expectMatch(newSessionLine)
	cs.expect("write wants to run (fs.write)")
	cs.expect(`content: "secret-hello"`)
	cs.expect("allow? ")
	cs.send("o\r")
	cs.expect("<- write ok")
	cs.expect("wrote the note")
	if sgr.FindString(cs.out.String()) == "" {
		t.Errorf("a terminal without NO_COLOR got no colour at all")
	}
	cs.send("/exit\r")
	cs.exitsOK()
	if data, err := os.ReadFile(note); err != nil || string(data) != "secret-hello" {
		t.Errorf("note.txt = %q, %v; want the approved write", data, err)
	}
	recs := e2etest.AuditOf(in.Audit(), "owner.approval")
	if len(recs) != 1 {
		t.Fatalf("owner.approval records = %d, want 1", len(recs))
	}
	p := recs[0].PayloadMap(t)
	if p["decision"] != "allow_once" || p["tool"] != "write" || p["session_id"] != sid || recs[0].SessionID != sid || recs[0].Origin != "owner" {
		t.Errorf("owner.approval = %+v origin %q, want allow_once of write on %s by owner", p, recs[0].Origin, sid)
	}
	if bytes.Contains(recs[0].Payload, []byte("secret-hello")) || bytes.Contains(recs[0].Payload, []byte("note.txt")) {
		t.Errorf("owner.approval payload %s holds argument content", recs[0].Payload)
	}
	if created := e2etest.AuditOf(in.Audit(), "owner.session.created"); len(created) != 1 || created[0].SessionID != sid {
		t.Errorf("owner.session.created = %+v, want one for %s", created, sid)
	}
	in.VerifyAudit()
}

func TestChatApprovalDenyLeavesNoFile(t *testing.T) {
	t.Parallel()
	in := e2etest.NewBareInstall(t, e2etest.SQLite)
	work := workDir(in)
	note := filepath.Join(work, "note.txt")
	in.Script(e2etest.Calls("writing", e2etest.ToolCall("write", map[string]any{"path": note, "content": "hello"})), e2etest.Say("could not write"))

	cs := chat(in, true, []string{"NO_COLOR=1"})
	cs.send("write a note\r")
	sid := cs.expectMatch(newSessionLine)
	cs.expect("allow? ")
	cs.send("d\r")
	cs.expect("<- write denied (APPROVAL_DENIED)")
	cs.expect("could not write")
	cs.send("\x04")
	cs.exitsOK()
	if s := sgr.FindString(cs.out.String()); s != "" {
		t.Errorf("NO_COLOR=1 output holds the colour sequence %q", s)
	}
	if _, err := os.Lstat(note); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("note.txt after a denial: %v, want it absent", err)
	}
	tools := toolMessages(branchOf(in, sid))
	if len(tools) != 1 || !strings.Contains(tools[0], "approval for write was not granted") {
		t.Errorf("tool messages the model saw = %q, want the denial", tools)
	}
	recs := e2etest.AuditOf(in.Audit(), "owner.approval")
	if len(recs) != 1 || recs[0].PayloadMap(t)["decision"] != "deny" {
		t.Errorf("owner.approval = %+v, want one deny", recs)
	}
}

func TestChatCtrlCKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	in := e2etest.NewBareInstall(t, e2etest.SQLite)
	work := workDir(in)
	pidFile, againFile := filepath.Join(work, "pid"), filepath.Join(work, "again")
	in.Script(
		e2etest.Calls("sleeping", e2etest.ToolCall("bash", map[string]any{"command": "echo $$ > " + pidFile + "; sleep 60; echo late"})),
		e2etest.Calls("again", e2etest.ToolCall("bash", map[string]any{"command": "echo again > " + againFile})),
		e2etest.Say("still here"))

	cs := chat(in, true, nil)
	cs.send("sleep a while\r")
	sid := cs.expectMatch(newSessionLine)
	cs.expect("-> bash")
	cs.expect("bash wants to run (process.exec)")
	cs.expect("allow? ")
	cs.send("s\r")
	pgid := waitPID(t, pidFile)
	cs.send("\x03")
	cs.expect("Cancelled.")
	e2etest.Eventually(t, fmt.Sprintf("process group %d to die after Ctrl-C", pgid), e2etest.TestTimeout, func() bool { return syscall.Kill(-pgid, 0) != nil })
	// The session is still usable: the next turn runs, bash is allowed
	// without a question (allowed for this session), and the model answers.
	cs.send("are you there?\r")
	cs.expect("(allowed for this session: bash)")
	cs.expect("<- bash ok")
	cs.expect("still here")
	cs.expect("you> ")
	cs.send("\x03") // Ctrl-C at an empty prompt leaves
	cs.exitsOK()
	branch := branchOf(in, sid)
	if last := branch[len(branch)-1]; last["role"] != "assistant" || !strings.Contains(last["content"].(string), "still here") {
		t.Errorf("last message = %+v, want the second turn's reply", last)
	}
	if data, err := os.ReadFile(againFile); err != nil || string(data) != "again\n" {
		t.Errorf("the second bash call wrote %q, %v", data, err)
	}
	recs := e2etest.AuditOf(in.Audit(), "owner.approval")
	if len(recs) != 2 || recs[0].PayloadMap(t)["decision"] != "allow_session" || recs[0].PayloadMap(t)["standing"] != nil ||
		recs[1].PayloadMap(t)["decision"] != "allow_session" || recs[1].PayloadMap(t)["standing"] != true {
		t.Errorf("owner.approval = %+v, want allow_session asked, then allow_session standing", recs)
	}
}

// A second Ctrl-C while the first one's cancellation is still under way
// (the command ignores SIGTERM, so its group dies only by SIGKILL after
// the grace period) leaves the chat once the turn has stopped.
func TestChatSecondCtrlCLeaves(t *testing.T) {
	t.Parallel()
	in := e2etest.NewBareInstall(t, e2etest.SQLite)
	work := workDir(in)
	pidFile := filepath.Join(work, "pid")
	in.SetJSON("tools.permission_rules", []map[string]string{{"tool": "bash", "action": "allow"}})
	in.Script(e2etest.Calls("stubborn", e2etest.ToolCall("bash", map[string]any{"command": "trap '' TERM; echo $$ > " + pidFile + "; sleep 60"})))

	cs := chat(in, true, nil)
	cs.send("sleep\r")
	pgid := waitPID(t, pidFile)
	cs.send("\x03")
	cs.expect("cancelling the turn")
	cs.send("\x03")
	cs.exitsOK()
	e2etest.Eventually(t, fmt.Sprintf("process group %d to die", pgid), e2etest.TestTimeout, func() bool { return syscall.Kill(-pgid, 0) != nil })
}

// Ctrl-D typed while the agent works (the terminal is not in raw mode
// then, so the terminal turns it into an end of input) leaves at the next
// prompt instead of leaving the line editor without input.
func TestChatCtrlDDuringATurnLeaves(t *testing.T) {
	t.Parallel()
	in := e2etest.NewBareInstall(t, e2etest.SQLite)
	work := workDir(in)
	pidFile := filepath.Join(work, "pid")
	in.SetJSON("tools.permission_rules", []map[string]string{{"tool": "bash", "action": "allow"}})
	in.Script(e2etest.Calls("napping", e2etest.ToolCall("bash", map[string]any{"command": "echo $$ > " + pidFile + "; sleep 1"})), e2etest.Say("rested"))

	cs := chat(in, true, nil)
	cs.send("nap\r")
	waitPID(t, pidFile)
	cs.send("\x04")
	cs.expect("rested")
	cs.exitsOK()
}

// waitPID waits (bounded) for a command to write its PID to path.
func waitPID(t *testing.T, path string) int {
	t.Helper()
	pid := 0
	e2etest.Eventually(t, "a PID in "+path, e2etest.TestTimeout, func() bool {
		data, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil && pid > 0
	})
	return pid
}

func TestChatPlainOutputWhenStdoutIsNotATerminal(t *testing.T) {
	t.Parallel()
	in := e2etest.NewBareInstall(t, e2etest.SQLite)
	workDir(in)
	in.Script(e2etest.Say("plain hello"))
	cs := chat(in, false, nil)
	cs.send("hi\r")
	cs.expect("plain hello")
	cs.send("/sessions\r")
	cs.expect("cli_")
	cs.send("/exit\r")
	cs.exitsOK()
	if out := cs.out.String(); strings.Contains(out, "\x1b") {
		t.Errorf("redirected chat output holds escape codes:\n%q", out)
	}
}
