package runtime

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/openprogram/openprogram/internal/clip"

	"github.com/openprogram/openprogram/runtime/provider"
)

// The history budget: before each model call the conversation is fitted into
// Options.ContextTokens minus the reply's reserve. Only what is sent is cut;
// the stored session never changes.
//
// Token estimate (deterministic, no tokenizer): a text costs one token per
// three bytes of UTF-8, rounded up, and every message, tool call and tool
// spec costs four more. Real tokenizers give about four bytes of English or
// code per token and about three bytes per CJK character, so the estimate
// errs on the side of sending less.
const (
	bytesPerToken    = 3
	messageOverhead  = 4
	shortenedKeep    = 512 // bytes of a shortened tool result that are kept
	shortenedMinimum = 2 * shortenedKeep
)

// Omitted says how much of the conversation one model request left out to
// fit the context window; it is stored in the assistant message's metadata.
type Omitted struct {
	// Messages is how many history messages were not sent.
	Messages int `json:"messages"`
	// Shortened is how many tool results were sent shortened.
	Shortened int `json:"shortened"`
	// Tokens is the estimated size of what was left out.
	Tokens int `json:"tokens"`
}

func estimateText(s string) int { return estimateBytes(len(s)) }

func estimateBytes(n int) int { return (n + bytesPerToken - 1) / bytesPerToken }

func estimateMessage(m provider.Message) int {
	n := messageOverhead + estimateText(m.Content) + estimateText(m.ToolCallID)
	for _, c := range m.ToolCalls {
		n += messageOverhead + estimateText(c.ID) + estimateText(c.Name) + estimateText(string(c.Arguments))
	}
	return n
}

// estimateFixed is what every request costs besides the messages: the
// system prompt and the tool specs.
func estimateFixed(system string, tools []provider.ToolSpec) int {
	n := messageOverhead + estimateText(system)
	for _, t := range tools {
		n += messageOverhead + estimateText(t.Name) + estimateText(t.Description) + estimateText(string(t.InputSchema))
	}
	return n
}

// historyBudget is what the messages, system prompt and tools may take:
// contextTokens minus the reply's reserve (outputTokens, or a quarter of
// the window when that is not set; never more than half of it). 0 means no
// budget.
func historyBudget(contextTokens, outputTokens int) int {
	if contextTokens <= 0 {
		return 0
	}
	reserve := outputTokens
	if reserve <= 0 {
		reserve = contextTokens / 4
	}
	reserve = min(reserve, contextTokens/2)
	return contextTokens - reserve
}

// unit is a run of messages that is kept or dropped whole: an assistant
// message with its tool results, or one other message.
type unit struct {
	start, end int // msgs[start:end]
	tokens     int
	drop       bool
	shorten    bool // its tool results are sent shortened
}

// fitHistory returns the messages to send so that the request fits budget
// (estimated), and what was left out (nil when nothing was). It never
// changes msgs.
//
// The system prompt, the first user message and the latest one (each in
// its speaker envelope) are always sent. Oldest first, every other unit is
// made to fit: a tool result longer than shortenedMinimum bytes is
// shortened when that is enough, else the unit is dropped whole, so a tool
// call is never sent without its result or the other way round. Units after
// the latest user message (the running turn's own tool calls) are only
// shortened, never dropped. If the protected messages alone do not fit, the
// request is sent over the budget and the server decides.
func fitHistory(system string, tools []provider.ToolSpec, msgs []provider.Message, budget int) ([]provider.Message, *Omitted) {
	if budget <= 0 {
		return msgs, nil
	}
	total := estimateFixed(system, tools)
	units := make([]unit, 0, len(msgs))
	firstUser, lastUser := -1, -1
	for i := 0; i < len(msgs); {
		u := unit{start: i, end: i + 1}
		if len(msgs[i].ToolCalls) > 0 {
			for u.end < len(msgs) && msgs[u.end].Role == provider.RoleTool {
				u.end++
			}
		}
		for _, m := range msgs[u.start:u.end] {
			u.tokens += estimateMessage(m)
		}
		if msgs[i].Role == provider.RoleUser {
			if firstUser < 0 {
				firstUser = len(units)
			}
			lastUser = len(units)
		}
		total += u.tokens
		units = append(units, u)
		i = u.end
	}
	over := total - budget
	if over <= 0 {
		return msgs, nil
	}
	om := &Omitted{}
	for k := range units {
		if over <= 0 {
			break
		}
		if k == firstUser || k == lastUser {
			continue
		}
		u := &units[k]
		if saved := shortenSavings(msgs[u.start:u.end]); saved > 0 && (saved >= over || k > lastUser) {
			u.shorten = true
			over -= saved
			om.Tokens += saved
			continue
		}
		if k > lastUser {
			continue
		}
		u.drop = true
		over -= u.tokens
		om.Tokens += u.tokens
		om.Messages += u.end - u.start
	}
	if om.Tokens == 0 {
		return msgs, nil // only protected messages: nothing could be left out
	}
	out := make([]provider.Message, 0, len(msgs)-om.Messages)
	for _, u := range units {
		switch {
		case u.drop:
		case u.shorten:
			for _, m := range msgs[u.start:u.end] {
				if m.Role == provider.RoleTool && len(m.Content) > shortenedMinimum {
					m.Content = shortened(m.Content)
					om.Shortened++
				}
				out = append(out, m)
			}
		default:
			out = append(out, msgs[u.start:u.end]...)
		}
	}
	return out, om
}

// shortenSavings is how many tokens shortening the tool results of ms
// would save. It builds no string.
func shortenSavings(ms []provider.Message) int {
	saved := 0
	for _, m := range ms {
		if m.Role == provider.RoleTool && len(m.Content) > shortenedMinimum {
			head := headLen(m.Content)
			saved += estimateText(m.Content) - estimateBytes(head+shortenedNoteLen(len(m.Content)-head))
		}
	}
	return saved
}

// headLen is how many bytes of s a shortened result keeps: shortenedKeep,
// cut back to a rune boundary.
func headLen(s string) int {
	return clip.Cut(s, shortenedKeep)
}

const (
	notePrefix = "\n["
	noteSuffix = " more bytes of this tool result were left out to fit the context window]"
)

func shortenedNote(left int) string { return notePrefix + strconv.Itoa(left) + noteSuffix }

// shortenedNoteLen is len(shortenedNote(left)), without building it.
func shortenedNoteLen(left int) int {
	digits := 1
	for left >= 10 {
		left /= 10
		digits++
	}
	return len(notePrefix) + digits + len(noteSuffix)
}

// shortened keeps the head of a long tool result and says how much is gone.
func shortened(s string) string {
	n := headLen(s)
	return s[:n] + shortenedNote(len(s)-n)
}

// budget is the runtime's history budget (0: none).
func (r *Runtime) budget() int { return historyBudget(r.opts.ContextTokens, r.opts.MaxOutputTokens) }

// fit is fitWindow with the runtime's system prompt and budget.
func (r *Runtime) fit(msgs []provider.Message, tools []provider.ToolSpec, unread Omitted) ([]provider.Message, *Omitted) {
	return fitWindow(r.system, tools, msgs, r.budget(), unread)
}

// fitWindow is fitHistory for msgs that follow history left out without
// being read (unread, see [window]): what fitHistory returns for the whole
// history.
func fitWindow(system string, tools []provider.ToolSpec, msgs []provider.Message, budget int, unread Omitted) ([]provider.Message, *Omitted) {
	sent, om := fitHistory(system, tools, msgs, budget)
	if unread == (Omitted{}) {
		return sent, om
	}
	if om == nil {
		om = &Omitted{}
	}
	om.Messages += unread.Messages
	om.Tokens += unread.Tokens
	return sent, om
}

// turnContext bounds the model calls and tool runs of one turn by
// Options.TurnTimeout: past it, the next model call fails with
// [provider.ClassTimeout] and the turn ends failed, with a text saying so.
// The turn loop keeps watching its own context, so a timeout is a failure,
// never a cancellation.
func (r *Runtime) turnContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := r.opts.TurnTimeout
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, d, &provider.Error{Class: provider.ClassTimeout,
		Err: fmt.Errorf("the turn ran longer than model.turn_timeout (%s)", d.Round(time.Millisecond))})
}
