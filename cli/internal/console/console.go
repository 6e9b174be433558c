// Package console is the owner's console: `openprogram chat` and
// `openprogram prompt`, views of the owner's line into the host's
// conversation service ([Owner]), and the terminal they use: reading lines
// (with line editing on a terminal, plainly otherwise), styling output only
// where it may be styled, and showing model-controlled text and tool
// arguments safely and compactly ([Printable], the one sanitiser of
// terminal output).
package console

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/openprogram/openprogram/internal/clip"

	"github.com/chzyer/readline"
)

// ErrInterrupt is returned by [Reader.ReadLine] when the person pressed
// Ctrl-C while typing.
var ErrInterrupt = errors.New("interrupted")

// Reader reads the person's lines. ReadLine shows prompt and returns the
// line without its newline, [ErrInterrupt] on Ctrl-C, or io.EOF on Ctrl-D
// or the end of input.
type Reader interface {
	ReadLine(prompt string) (string, error)
	Close() error
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && readline.IsTerminal(int(file.Fd()))
}

// NewReader returns a line-editing reader when stdin and stdout are both
// terminals, else a plain one that reads lines from stdin and writes the
// prompt as plain text. interrupts are SIGINTs delivered while the plain
// reader waits (a terminal in raw mode turns Ctrl-C into a key instead).
func NewReader(stdin io.Reader, stdout io.Writer, interrupts <-chan os.Signal) (Reader, error) {
	if IsTerminal(stdin) && IsTerminal(stdout) {
		rl, err := readline.NewEx(&readline.Config{
			Stdin:           readline.NewCancelableStdin(eofAsCtrlD{stdin}),
			Stdout:          stdout,
			InterruptPrompt: "^C",
			EOFPrompt:       "\n",
			HistoryLimit:    200,
			FuncIsTerminal:  func() bool { return true },
		})
		if err != nil {
			return nil, fmt.Errorf("set up the terminal: %w", err)
		}
		return &lineEditor{rl: rl}, nil
	}
	p := &plain{out: stdout, interrupts: interrupts, lines: make(chan lineOrErr), closed: make(chan struct{})}
	go p.read(stdin)
	return p, nil
}

// eofAsCtrlD turns an end of input typed on the terminal back into the
// Ctrl-D key it came from. A Ctrl-D typed while no line is being read (a
// turn runs, the terminal is not in raw mode) is kept by the terminal as an
// end-of-file mark, which a read in raw mode later returns as a NUL byte,
// or, if a read is under way, as a read of zero bytes that the line editor
// would take for a closed input. As the key it ends the chat at the next
// prompt, as Ctrl-D does there. (A NUL typed in raw mode, Ctrl-@, is
// taken for Ctrl-D too; a hung-up terminal reads as end of input and ends
// the chat the same way.)
type eofAsCtrlD struct{ r io.Reader }

func (e eofAsCtrlD) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	switch {
	case n == 0 && errors.Is(err, io.EOF) && len(p) > 0:
		p[0] = ctrlD
		return 1, nil
	case n > 0:
		for i := range p[:n] {
			if p[i] == 0 {
				p[i] = ctrlD
			}
		}
	}
	return n, err
}

const ctrlD = 0x04

type lineEditor struct{ rl *readline.Instance }

func (e *lineEditor) ReadLine(prompt string) (string, error) {
	e.rl.SetPrompt(prompt)
	line, err := e.rl.Readline()
	switch {
	case errors.Is(err, readline.ErrInterrupt):
		return line, ErrInterrupt
	case err != nil:
		return line, err
	}
	return line, nil
}

func (e *lineEditor) Close() error { return e.rl.Close() }

type lineOrErr struct {
	line string
	err  error
}

// plain reads lines in its own goroutine, so that ReadLine can also wait
// for an interrupt. The goroutine ends at the end of input; a line typed
// ahead waits for the next ReadLine.
type plain struct {
	out        io.Writer
	interrupts <-chan os.Signal
	lines      chan lineOrErr
	closed     chan struct{}
	closeOnce  sync.Once
}

// maxLine bounds one line of input (a prompt of the console).
const maxLine = 4 << 20

func (p *plain) read(in io.Reader) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		select {
		case p.lines <- lineOrErr{line: strings.TrimSuffix(sc.Text(), "\r")}:
		case <-p.closed:
			return
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	for {
		select {
		case p.lines <- lineOrErr{err: err}:
		case <-p.closed:
			return
		}
	}
}

func (p *plain) ReadLine(prompt string) (string, error) {
	fmt.Fprint(p.out, prompt)
	select {
	case l := <-p.lines:
		if l.err != nil {
			fmt.Fprintln(p.out)
		}
		return l.line, l.err
	case <-p.interrupts:
		fmt.Fprintln(p.out, "^C")
		return "", ErrInterrupt
	case <-p.closed:
		return "", io.EOF
	}
}

// Close makes ReadLine return io.EOF. A read of stdin under way cannot be
// cancelled portably: the goroutine ends after it, at the next line or the
// end of input.
func (p *plain) Close() error {
	p.closeOnce.Do(func() { close(p.closed) })
	return nil
}

// Style colours output when Color is set, and is plain text otherwise.
type Style struct{ Color bool }

// NewStyle colours output only for a terminal and when NO_COLOR is unset
// or empty (https://no-color.org).
func NewStyle(stdout io.Writer, noColor string) Style {
	return Style{Color: noColor == "" && IsTerminal(stdout)}
}

func (s Style) wrap(code, text string) string {
	if !s.Color {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// Dim is for tool calls and other quiet lines.
func (s Style) Dim(text string) string { return s.wrap("2", text) }

// Bold is for prompts.
func (s Style) Bold(text string) string { return s.wrap("1", text) }

// Warn is for approval questions.
func (s Style) Warn(text string) string { return s.wrap("33", text) }

// Err is for failures.
func (s Style) Err(text string) string { return s.wrap("31", text) }

// Printable drops the control characters of model-controlled text other
// than newline and tab, so a reply cannot move the cursor, retitle the
// window or hide text with escape sequences. Invalid UTF-8 becomes U+FFFD.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && r != '\n' && r != '\t') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// FoldArgs shows a tool call's arguments (a JSON object) one key per line,
// keys sorted, values as compact JSON; a value longer than width bytes is
// folded to its start and the number of bytes left out. Arguments that are
// not an object are shown as one folded value.
func FoldArgs(args string, width int) []string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &obj); err != nil {
		return []string{fold(strings.TrimSpace(args), width)}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	lines := make([]string, 0, len(keys))
	for _, k := range keys {
		var b bytes.Buffer
		text := string(obj[k])
		if json.Compact(&b, obj[k]) == nil {
			text = b.String()
		}
		lines = append(lines, Printable(k)+": "+fold(text, width))
	}
	return lines
}

func fold(s string, width int) string {
	s = Printable(s)
	if len(s) <= width {
		return s
	}
	cut := clip.Cut(s, width)
	return fmt.Sprintf("%s… (%d more bytes)", s[:cut], len(s)-cut)
}

// OneLine keeps a message on one line: every run of white space, line
// breaks included, becomes one space. Errors on stderr stay one line each.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
