package runtime

import (
	"context"
	"fmt"

	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/sessions"
)

// A turn reads the stored branch from its head backwards only as far as
// the history budget reaches, so that its cost follows the context window,
// not the session's length.
//
// fitHistory drops the oldest units first and keeps the first user
// message: once the first user message, the units read and the latest
// message are over the budget by themselves, every older unit is dropped
// whatever it holds, so it need not be read. Only how much was left out
// ([Omitted]) depends on them: every user message the turn loop stores
// carries that sum, the [prefix] of the history before it, so the reader
// goes back to such a message and takes the rest from it.

// prefix sums up the model's conversation before a user message. The turn
// loop stores it in the message's metadata (history_before).
type prefix struct {
	// Messages and Tokens are how many model messages the history before
	// it holds, and their estimated size.
	Messages int `json:"messages"`
	Tokens   int `json:"tokens"`
	// FirstUser is the branch's first user message; "" when it is this one.
	FirstUser string `json:"first_user,omitempty"`
}

// Pages of the backwards read: the first is small, as most turns need
// little; each next one is twice the size, up to the largest.
// Past wholeAfter messages read without finding where to stop (a session
// stored before user messages carried history_before), the rest is read
// whole with Branch, which reads a long branch faster than pages do.
const (
	firstPage  = 64
	lastPage   = 1024
	wholeAfter = 2 * lastPage
)

// window is the history a turn starts from.
type window struct {
	// msgs is the conversation to fit: every part read (from the first
	// user message, or from the part where the read stopped, preceded by
	// the first user message).
	msgs []provider.Message
	// unread is what the parts before msgs hold besides the first user
	// message: all of it is left out of every request of the turn.
	unread Omitted
	// head is the branch's newest message ("" for none): the new user
	// message's parent.
	head string
	// before is the new user message's history_before.
	before prefix
}

// readWindow reads the branch of session sid backwards until the budget is
// full, or all of it when there is no budget. fixed is what the system
// prompt and tools cost; latest is the new user message.
func (r *Runtime) readWindow(ctx context.Context, sid string, budget, fixed int, latest provider.Message) (window, error) {
	store := r.opts.Store
	if budget <= 0 {
		branch, err := store.Branch(ctx, sid)
		if err != nil {
			return window{}, err
		}
		return whole(lastID(branch), parts(branch)), nil
	}
	c := cutter{store: store, budget: budget, extra: fixed + estimateMessage(latest), first: map[string]part{}}
	var (
		ps      []part             // the parts read, oldest first
		pending []sessions.Message // tool results read whose part starts on an older page
		head    string
		before  string
		limit   = firstPage
		read    int
	)
	for {
		page, err := store.BranchBefore(ctx, sid, before, limit)
		if err != nil {
			return window{}, err
		}
		if head == "" {
			head = lastID(page)
		}
		if len(page) == 0 || page[0].ParentID == "" {
			return whole(head, append(parts(append(page, pending...)), ps...)), nil
		}
		chain := append(page, pending...)
		i := 0
		for i < len(chain) && chain[i].Role == sessions.RoleTool {
			i++
		}
		pending = chain[:i]
		older := parts(chain[i:])
		ps = append(older, ps...)
		w, ok, err := c.cut(ctx, ps, len(older))
		if err != nil || ok {
			w.head = head
			return w, err
		}
		if read += len(page); read >= wholeAfter {
			branch, err := store.Branch(ctx, sid)
			if err != nil {
				return window{}, err
			}
			return whole(lastID(branch), parts(branch)), nil
		}
		before, limit = page[0].ID, min(2*limit, lastPage)
	}
}

func lastID(chain []sessions.Message) string {
	if len(chain) == 0 {
		return ""
	}
	return chain[len(chain)-1].ID
}

// whole is the window of a whole branch, its parts ps.
func whole(head string, ps []part) window {
	w := window{head: head}
	for _, p := range ps {
		if p.user && w.before.FirstUser == "" {
			w.before.FirstUser = p.id
		}
		w.msgs = append(w.msgs, p.msgs...)
		w.before.Messages += len(p.msgs)
		w.before.Tokens += p.tokens
	}
	return w
}

// cutter looks for where a backwards read can stop.
type cutter struct {
	store  sessions.Store
	budget int
	extra  int             // the fixed costs and the latest message
	first  map[string]part // the first user message, once fetched
	tokens int             // of the parts looked at so far, the newest ones
}

// cut looks, newest first, through the n oldest parts of ps (the ones not
// looked at yet) for a user message that carries its history_before and
// from which the first user message, the parts from it on and the fixed
// costs and the latest message are over budget. ok is false when there is
// none yet: read further.
func (c *cutter) cut(ctx context.Context, ps []part, n int) (window, bool, error) {
	for k := n - 1; k >= 0; k-- {
		p := ps[k]
		if !p.user || p.before == nil {
			c.tokens += p.tokens
			continue
		}
		// p is the first user message itself, or the first one is older
		// (and p is one of the parts that may be left out).
		fu, own := p, 0
		if id := p.before.FirstUser; id != "" {
			own = p.tokens
			var ok bool
			if fu, ok = c.first[id]; !ok {
				m, err := c.store.GetMessage(ctx, id)
				if err != nil {
					return window{}, false, fmt.Errorf("read the first user message: %w", err)
				}
				if m.Role != sessions.RoleUser {
					return window{}, false, fmt.Errorf("message %q, named the first user message by %q, is a %s message: the stored history is inconsistent", id, p.id, m.Role)
				}
				fu = makePart(m, nil)
				c.first[id] = fu
			}
		}
		if c.extra+fu.tokens+own+c.tokens <= c.budget {
			c.tokens += p.tokens
			continue
		}
		w := window{before: *p.before}
		if p.before.FirstUser != "" {
			w.msgs = append(w.msgs, fu.msgs...)
			w.unread = Omitted{Messages: max(p.before.Messages-len(fu.msgs), 0), Tokens: max(p.before.Tokens-fu.tokens, 0)}
		} else {
			w.before.FirstUser = p.id
			w.unread = Omitted{Messages: p.before.Messages, Tokens: p.before.Tokens}
		}
		for _, q := range ps[k:] {
			w.msgs = append(w.msgs, q.msgs...)
			w.before.Messages += len(q.msgs)
			w.before.Tokens += q.tokens
		}
		return w, true, nil
	}
	return window{}, false, nil
}
