package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/events"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/sessions"
)

// argWidth is how much of one tool argument an approval question shows.
const argWidth = 200

const chatHelp = `Type a message and press Enter to send it.
  /sessions     list the most recent sessions (* marks the current one)
  /new          start a new session with your next message
  /switch ID    continue session ID
  /help         this help
  /exit         leave (so do Ctrl-D, and Ctrl-C at an empty prompt)
Ctrl-C while the agent works cancels the turn (its running commands too);
pressed again before the turn has stopped, it also leaves.
When a tool needs your approval, answer o (allow once), s (allow this tool
for the rest of the session) or d (deny).`

// ChatOptions are the terminal a chat runs on.
type ChatOptions struct {
	// Session continues this session; "" starts a new one with the first
	// message.
	Session string
	// In and Out are the terminal (or plain streams).
	In  io.Reader
	Out io.Writer
	// Interrupts delivers Ctrl-C: it cancels a running turn, and at an
	// empty prompt leaves.
	Interrupts <-chan os.Signal
	// NoColor is $NO_COLOR: set, nothing is styled.
	NoColor string
}

// Chat talks with the owner on c until /exit, Ctrl-D or Ctrl-C at an
// empty prompt. Ctrl-C while a turn runs cancels that turn only.
func (c *Owner) Chat(ctx context.Context, o ChatOptions) error {
	ch := &chat{oc: c, out: o.Out, sigs: o.Interrupts, style: NewStyle(o.Out, o.NoColor)}
	if o.Session != "" {
		s, err := c.Session(ctx, o.Session)
		if err != nil {
			return err
		}
		ch.cur = &s
	}
	in, err := NewReader(o.In, o.Out, o.Interrupts)
	if err != nil {
		return err
	}
	defer in.Close()
	stop := context.AfterFunc(ctx, func() { in.Close() })
	defer stop()
	ch.in = in
	return ch.loop(ctx)
}

// chat is one conversation at the terminal.
type chat struct {
	oc    *Owner
	in    Reader
	out   io.Writer
	style Style
	sigs  <-chan os.Signal
	// cur is the session messages go to; nil: the next one makes a session.
	cur *sessions.Session
	// quit is set when input ended, or Ctrl-C came twice, during a turn.
	quit bool
}

func (c *chat) say(format string, args ...any) { fmt.Fprintf(c.out, format+"\n", args...) }

func (c *chat) loop(ctx context.Context) error {
	where := "a new session"
	if c.cur != nil {
		where = "session " + c.cur.ID
	}
	c.say("%s", c.style.Dim(fmt.Sprintf("OpenProgram chat as the owner, in %s; working in %s. /help for help.",
		where, strings.Join(c.oc.line.Speaker().WorkDirs(), ", "))))
	for !c.quit && ctx.Err() == nil {
		line, err := c.in.ReadLine(c.style.Bold("you> "))
		switch {
		case errors.Is(err, ErrInterrupt):
			if strings.TrimSpace(line) == "" {
				return nil
			}
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return fmt.Errorf("read your input: %w", err)
		}
		text := strings.TrimSpace(line)
		switch {
		case text == "":
		case strings.HasPrefix(text, "/"):
			if c.command(ctx, text) {
				return nil
			}
		default:
			c.send(ctx, line)
		}
	}
	return nil
}

// command runs a slash command and reports whether to exit.
func (c *chat) command(ctx context.Context, text string) (exit bool) {
	name, arg, _ := strings.Cut(text, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/exit", "/quit":
		return true
	case "/help":
		c.say("%s", chatHelp)
	case "/new":
		c.cur = nil
		c.say("%s", c.style.Dim("Your next message starts a new session."))
	case "/sessions":
		list, err := c.oc.svc.Store().ListSessions(ctx, 20)
		if err != nil {
			c.say("%s", c.style.Err(fmt.Sprintf("list sessions: %v", err)))
			return false
		}
		if len(list) == 0 {
			c.say("No sessions yet.")
		}
		for _, s := range list {
			mark := " "
			if c.cur != nil && c.cur.ID == s.ID {
				mark = "*"
			}
			c.say("%s %s  %s  %-4s %s", mark, s.ID, s.UpdatedAt.Local().Format(time.DateTime), s.Source, Printable(OneLine(s.Title)))
		}
	case "/switch":
		if arg == "" {
			c.say("Usage: /switch ID (see /sessions)")
			return false
		}
		s, err := c.oc.Session(ctx, arg)
		if err != nil {
			c.say("%s", c.style.Err(err.Error()))
			return false
		}
		c.cur = &s
		c.say("%s", c.style.Dim("Now in session "+s.ID+": "+Printable(OneLine(s.Title))))
	default:
		c.say("Unknown command %s; /help lists them.", Printable(clip.String(name, 64)))
	}
	return false
}

// send runs one turn with text, showing its progress, asking its
// approvals and cancelling it on Ctrl-C.
func (c *chat) send(ctx context.Context, text string) {
	sid := ""
	if c.cur != nil {
		sid = c.cur.ID
	}
	for stale := true; stale; { // a Ctrl-C from before this turn is not for it
		select {
		case <-c.sigs:
		default:
			stale = false
		}
	}
	turnCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	evs, done := c.oc.send(turnCtx, sid, text)
	v := &turnView{chat: c, out: c.out, info: c.out, style: c.style, cancel: cancel}
	out := v.follow(evs, done, c.sigs)
	if v.cancelled {
		select {
		case <-c.sigs: // Ctrl-C again as the cancelled turn ended
			v.quit = true
		default:
		}
	}
	// A new session is the conversation's from its first turn on, even a
	// cancelled one (it keeps the message; one left empty is gone).
	if c.cur == nil && v.sid != "" {
		if s, err := c.oc.Session(ctx, v.sid); err == nil {
			c.cur = &s
		}
	}
	v.end(out)
}

// follow shows the turn's events until it returns, and returns how it
// returned. sigs (nil: none) interrupts it. Every event the turn reported
// came before its outcome.
func (v *turnView) follow(evs <-chan events.Event, done <-chan turnOutcome, sigs <-chan os.Signal) turnOutcome {
	for {
		select {
		case out := <-done:
			return out
		case e := <-evs:
			v.show(e)
		case <-sigs:
			v.interrupt()
		}
	}
}

// turnView shows one turn as it happens, for `chat` and `prompt` alike:
// the reply streams to out, each tool call is one line on info, and
// everything the model or a tool says passes Printable, the one
// sanitiser of terminal output.
type turnView struct {
	*chat               // nil for prompt: nobody answers questions
	out, info io.Writer // the reply; the tool lines (the same writer in chat)
	style     Style
	sid       string // the turn's session, once it started
	cancel    context.CancelFunc
	streamed  bool     // reply text was shown
	midLine   bool     // the cursor is not at the start of a line
	cancelled bool     // the owner pressed Ctrl-C
	denied    []string // the tools the gate denied, in order, each once
}

// line writes one status line on info.
func (v *turnView) line(text string) { fmt.Fprintln(v.info, text) }

func (v *turnView) newline() {
	if v.midLine {
		fmt.Fprintln(v.out)
		v.midLine = false
	}
}

// interrupt cancels the turn; a second Ctrl-C in the same turn also
// leaves the chat once the turn has stopped.
func (v *turnView) interrupt() {
	v.newline()
	if v.cancelled {
		v.quit = true
		v.say("%s", v.style.Warn("^C again: leaving once the turn has stopped…"))
	} else {
		v.cancelled = true
		v.say("%s", v.style.Warn("^C: cancelling the turn…"))
	}
	v.cancel()
}

// show shows one event of the view's turn (its own observer: every event
// is the turn's).
func (v *turnView) show(e events.Event) {
	switch d := e.Data.(type) {
	case events.TurnStartData:
		if v.chat != nil && v.cur == nil {
			v.say("%s", v.style.Dim("New session "+d.SessionID))
		}
		v.sid = d.SessionID
	case events.TextData:
		if d.Text == "" {
			return
		}
		text := Printable(d.Text)
		fmt.Fprint(v.out, text)
		v.streamed = true
		v.midLine = !strings.HasSuffix(text, "\n")
	case events.ToolStartData:
		v.newline()
		v.line(v.style.Dim("-> " + Printable(d.Tool)))
	case events.ToolEndData:
		outcome := "ok"
		switch {
		case d.Denied:
			outcome = "denied (" + d.ReasonCode + ")"
			if !slices.Contains(v.denied, d.Tool) {
				v.denied = append(v.denied, d.Tool)
			}
		case d.IsError:
			outcome = "failed"
		}
		v.newline()
		v.line(v.style.Dim("<- " + Printable(d.Tool) + " " + outcome))
	case events.StandingData:
		// The gate allowed the call with a standing approval (chat, or
		// prompt --session); its audit record is written.
		v.newline()
		v.line(v.style.Dim("(allowed for this session: " + Printable(d.Tool) + ")"))
	case events.QuestionData:
		if v.chat == nil {
			return // prompt is non-interactive: its approvals are denied at once
		}
		v.newline()
		v.ask(d.QuestionID)
	}
}

// ask answers one question of the turn at the terminal. Ctrl-C there
// cancels the turn; the end of input denies and then leaves.
func (v *turnView) ask(id string) {
	q, ok := v.oc.line.Question(id)
	if !ok {
		return // already resolved
	}
	if q.Kind != questions.KindApproval {
		v.say("%s", v.style.Warn("? "+Printable(q.Prompt)))
		line, err := v.in.ReadLine(v.style.Bold("answer> "))
		v.afterRead(err)
		v.oc.line.Answer(id, line, err != nil)
		return
	}
	var toolName, capab, args string
	if a := q.Approval; a != nil {
		toolName, capab, args = a.Tool, a.Capability, a.Arguments
	}
	approval := conversation.Approval{SessionID: q.SessionID, QuestionID: id, Tool: toolName, Capability: capab}
	v.say("%s", v.style.Warn(fmt.Sprintf("? %s wants to run (%s):", Printable(toolName), Printable(capab))))
	for _, l := range FoldArgs(args, argWidth) {
		v.say("    %s", l)
	}
	for approval.Decision == "" {
		line, err := v.in.ReadLine(v.style.Warn("allow? [o]nce, for this [s]ession, [d]eny: "))
		if v.afterRead(err) {
			approval.Decision = conversation.DecisionDeny
			break
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "o", "once", "y", "yes", "allow":
			approval.Decision = conversation.DecisionAllowOnce
		case "s", "session":
			approval.Decision = conversation.DecisionAllowSession
		case "d", "deny", "n", "no":
			approval.Decision = conversation.DecisionDeny
		default:
			v.say("Answer o (allow once), s (allow for this session) or d (deny).")
		}
	}
	// The line keeps an "allow for this session" in the store before the
	// call goes on (the gate then answers the next calls of this tool in
	// this session itself, here, after a restart and in prompt --session),
	// answers the question and records the decision.
	open, err := v.oc.line.Approve(context.Background(), approval)
	if err != nil {
		v.say("%s", v.style.Err("could not keep the approval for this session ("+Printable(OneLine(err.Error()))+"); this call is allowed, later ones will ask again"))
	}
	if !open {
		v.say("%s", v.style.Dim("(that question had already ended)"))
	}
}

// afterRead handles an interrupt or the end of input while a question is
// asked and reports whether there is no answer.
func (v *turnView) afterRead(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrInterrupt):
		v.interrupt()
	default:
		v.quit = true
	}
	return true
}

// end shows how the turn ended.
func (v *turnView) end(out turnOutcome) {
	v.newline()
	switch {
	case out.err != nil && v.cancelled:
		v.say("%s", v.style.Warn("Cancelled. The session keeps your message; say what to do next."))
	case errors.Is(out.err, conversation.ErrSessionBusy):
		v.say("%s", v.style.Err("This session is running another turn (in another process); wait for it, or /new."))
	case out.err != nil:
		v.say("%s", v.style.Err("The turn did not complete: "+Printable(OneLine(out.err.Error()))))
	case out.reply.Failed:
		v.say("%s", v.style.Err(Printable(out.reply.Text)))
	case !v.streamed:
		v.say("%s", Printable(out.reply.Text))
	}
}
