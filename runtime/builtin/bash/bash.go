package bash

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/internal/tooldef"
	"github.com/openprogram/openprogram/runtime/internal/opt"
	"github.com/openprogram/openprogram/runtime/secretenv"
	"github.com/openprogram/openprogram/runtime/tool"
)

// Defaults for [Options].
const (
	DefaultTimeout        = 30 * time.Second
	MaxTimeout            = 10 * time.Minute
	DefaultKillGrace      = 2 * time.Second
	DefaultDrainTimeout   = 2 * time.Second
	DefaultMaxOutputBytes = 30_000
	DefaultMaxUpdateLines = 10_000
)

// Reason codes bash reports in tool.Result.Reason.
const (
	ReasonExitNonZero = "EXIT_NONZERO"
	ReasonNoWorkDir   = "NO_WORKDIR"
	ReasonStart       = "START_FAILED"
	// ReasonProtectedDir: the working directory is inside the state
	// directory, which no speaker's command may run in.
	ReasonProtectedDir = "PROTECTED_WORKDIR"
)

// Options configure the bash tool. Zero values mean defaults.
type Options struct {
	// WorkDirs: the command runs in the first one when the call's
	// tool.CallInfo carries no speaker (else in the speaker's first). With
	// none, calls fail with NO_WORKDIR.
	WorkDirs []string
	// StateDir is the state directory when the call's tool.CallInfo carries
	// no speaker: a command never runs with its working directory inside it.
	StateDir string
	// Shell is the program that runs the command: `<Shell> -c <command>`,
	// or for pwsh and powershell `-EncodedCommand` with the command. Empty
	// means bash on Unix; on Windows Git for Windows' bash.exe when found
	// (PATH, beside git.exe on PATH, %ProgramFiles%\Git\bin, the per-user
	// install), else pwsh, else powershell.exe. The tool's description
	// names the shell.
	Shell string
	// Env is the base environment (default os.Environ()). The command
	// always gets it stripped of Secrets.
	Env []string
	// Secrets are the variables no command may see. The zero List still
	// holds the fixed ones (secretenv.Fixed and every *_API_KEY); the
	// caller adds those its configuration names (runtime.SecretEnv).
	Secrets secretenv.List
	// DefaultTimeout applies without timeout_ms (default 30 s); timeout_ms
	// is capped at MaxTimeout (10 min).
	DefaultTimeout time.Duration
	// KillGrace is how long the process group has between SIGTERM and
	// SIGKILL (default 2 s).
	KillGrace time.Duration
	// DrainTimeout bounds the wait for the output pipe once the command
	// is over, in case a process outside the group still holds it
	// (default 2 s).
	DrainTimeout time.Duration
	// MaxOutputBytes caps the output in the result, head and tail kept
	// (default 30 000).
	MaxOutputBytes int
	// MaxUpdateLines caps how many output lines are streamed as updates
	// (default 10 000).
	MaxUpdateLines int
	// KeepBackground leaves processes the command started in the
	// background running after it exits. By default the whole process
	// group is terminated when the command finishes, so nothing a tool
	// call started outlives it.
	KeepBackground bool
}

type bashTool struct {
	o      Options
	sh     shell
	schema json.RawMessage
}

// New returns the bash tool; nil opts means defaults.
func New(opts *Options) tool.Tool {
	b := &bashTool{}
	if opts != nil {
		b.o = *opts
	}
	o := &b.o
	b.sh = findShell(o.Shell)
	help, _ := json.Marshal(commandHelp(b.sh))
	b.schema = json.RawMessage(tooldef.Object([]string{"command"},
		`"command": {"type": "string", "minLength": 1, "description": `+string(help)+`}`,
		`"timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600000, "description": "Timeout in milliseconds. Default 30000, at most 600000."}`,
		`"description": {"type": "string", "description": "A few words saying what the command does."}`,
	))
	opt.Positive(&o.DefaultTimeout, DefaultTimeout)
	opt.Positive(&o.KillGrace, DefaultKillGrace)
	opt.Positive(&o.DrainTimeout, DefaultDrainTimeout)
	opt.Positive(&o.MaxOutputBytes, DefaultMaxOutputBytes)
	opt.Positive(&o.MaxUpdateLines, DefaultMaxUpdateLines)
	return b
}

type args struct {
	Command     string `json:"command"`
	TimeoutMS   int64  `json:"timeout_ms"`
	Description string `json:"description"`
}

func (b *bashTool) Name() string                 { return "bash" }
func (b *bashTool) Description() string          { return describe(b.sh) }
func (b *bashTool) InputSchema() json.RawMessage { return b.schema }
func (b *bashTool) Capability() authz.Capability { return authz.CapProcessExec }

func (b *bashTool) timeout(a args) time.Duration {
	d := b.o.DefaultTimeout
	if a.TimeoutMS > 0 {
		d = time.Duration(a.TimeoutMS) * time.Millisecond
	}
	return min(d, MaxTimeout)
}

// TimeoutHint implements tool.TimeoutHinter: the command's own timeout
// plus the time needed to kill the group and drain its output.
func (b *bashTool) TimeoutHint(raw json.RawMessage) time.Duration {
	var a args
	_ = json.Unmarshal(raw, &a)
	return b.timeout(a) + 2*b.o.KillGrace + b.o.DrainTimeout + 5*time.Second
}

func (b *bashTool) Execute(ctx context.Context, _ string, raw json.RawMessage, update func(string)) (tool.Result, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return tool.ErrorResult(tool.ReasonInvalidArguments, "bash: decode arguments: "+err.Error()), nil
	}
	if update == nil {
		update = func(string) {}
	}
	dirs, stateDir := b.o.WorkDirs, b.o.StateDir
	if info, ok := tool.CallFrom(ctx); ok && info.Speaker.Valid() {
		// The speaker the gate checked, whole: its directories, not ours.
		dirs, stateDir = info.Speaker.WorkDirs(), info.Speaker.StateDir()
	}
	if len(dirs) == 0 {
		return tool.ErrorResult(ReasonNoWorkDir, "bash: no working directory is configured"), nil
	}
	if wd, err := authz.ResolvePath("", dirs[0]); err == nil && authz.InStateDir(stateDir, wd) {
		return tool.ErrorResult(ReasonProtectedDir, "bash: the working directory is inside "+authz.PhraseProtectedDir+"; set agent.work_dirs to a directory outside the state directory"), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	timeout := b.timeout(a)

	pr, pw, err := os.Pipe()
	if err != nil {
		return tool.Result{}, fmt.Errorf("bash: create output pipe: %w", err)
	}
	cmd := exec.Command(b.sh.path, b.sh.args(a.Command)...)
	cmd.Dir = dirs[0]
	cmd.Env = b.o.Secrets.Strip(b.env())
	cmd.Stdout, cmd.Stderr = pw, pw
	prepareGroup(cmd)
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return tool.ErrorResult(ReasonStart, fmt.Sprintf("bash: start %s: %v", b.sh.path, err)), nil
	}
	pw.Close()
	pgid, err := startedGroup(cmd)
	if err != nil {
		_ = cmd.Wait()
		pr.Close()
		return tool.ErrorResult(ReasonStart, fmt.Sprintf("bash: start %s: %v", b.sh.path, err)), nil
	}
	defer pgid.close()

	out := newHeadTail(b.o.MaxOutputBytes)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		b.readLines(pr, out, update)
	}()
	waitDone := make(chan error, 1)
	go func() { waitDone <- cmd.Wait() }()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var waitErr error
	timedOut, cancelled := false, false
	select {
	case waitErr = <-waitDone:
	case <-ctx.Done():
		cancelled = true
	case <-timer.C:
		timedOut = true
	}
	killed := false
	if cancelled || timedOut {
		waitErr = b.terminate(pgid, waitDone)
		killed = true
	}
	if !b.o.KeepBackground {
		// Whatever the command left in its group goes too.
		b.reapGroup(pgid)
	}
	drain := time.NewTimer(b.o.DrainTimeout)
	select {
	case <-readDone:
	case <-drain.C:
		pr.Close() // unblocks the reader; a process outside the group holds the pipe
		<-readDone
	}
	drain.Stop()
	pr.Close()

	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	var status string
	signal, signaled := killedBy(cmd.ProcessState)
	switch {
	case timedOut:
		status = fmt.Sprintf("[timed out after %s; process group killed]", timeout)
	case cancelled:
		status = "[cancelled; process group killed]"
	case signaled:
		status = fmt.Sprintf("[killed by signal %s]", signal)
	case waitErr != nil && cmd.ProcessState == nil:
		status = fmt.Sprintf("[wait failed: %v]", waitErr)
	default:
		status = fmt.Sprintf("[exit code: %d]", code)
	}
	text := out.String()
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += status
	res := tool.Result{
		Content: []tool.Content{tool.Text(text)},
		Details: map[string]any{"exit_code": code, "output_bytes": out.total, "killed": killed},
	}
	switch {
	case timedOut:
		res.IsError, res.Reason = true, tool.ReasonTimeout
		res.Details[tool.DetailTimeout] = true
	case cancelled:
		res.IsError, res.Reason = true, tool.ReasonCancelled
		res.Details[tool.DetailCancelled] = true
	case code != 0:
		res.IsError, res.Reason = true, ReasonExitNonZero
	}
	return res, nil
}

func (b *bashTool) env() []string {
	if b.o.Env != nil {
		return b.o.Env
	}
	return os.Environ()
}

// readLines copies the pipe into out and streams complete lines (long
// lines in chunks) through update.
func (b *bashTool) readLines(r io.Reader, out *headTail, update func(string)) {
	br := bufio.NewReaderSize(r, 64<<10)
	lines := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			chunk = decodeOutput(chunk)
			out.Write(chunk)
			if lines < b.o.MaxUpdateLines {
				update(strings.TrimSuffix(strings.TrimSuffix(string(chunk), "\n"), "\r"))
				lines++
				if lines == b.o.MaxUpdateLines {
					update(fmt.Sprintf("[output beyond %d lines is not streamed]", lines))
				}
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// headTail keeps the first and last bytes of a stream, up to max in all.
type headTail struct {
	max   int
	head  []byte
	tail  []byte
	total int
}

func newHeadTail(max int) *headTail { return &headTail{max: max} }

func (h *headTail) Write(p []byte) {
	h.total += len(p)
	hmax := h.max / 2
	if n := hmax - len(h.head); n > 0 {
		k := min(n, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return
	}
	tmax := h.max - hmax
	h.tail = append(h.tail, p...)
	if len(h.tail) > 2*tmax {
		h.tail = append(h.tail[:0], h.tail[len(h.tail)-tmax:]...)
	}
}

func (h *headTail) String() string {
	tmax := h.max - h.max/2
	tail := h.tail
	if len(tail) > tmax {
		tail = tail[len(tail)-tmax:]
	}
	dropped := h.total - len(h.head) - len(tail)
	if dropped <= 0 {
		return string(h.head) + string(tail)
	}
	return fmt.Sprintf("%s\n[... %d bytes truncated ...]\n%s", h.head, dropped, tail)
}

var _ tool.TimeoutHinter = (*bashTool)(nil)
