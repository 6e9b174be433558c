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
const (
	firstPage = 64
	lastPage  = 1024
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
		return whole(branch), nil
	}
	latestTokens := estimateMessage(latest)
	var (
		read   []sessions.Message // root first: a suffix of the branch
		before string
		limit  = firstPage
		first  = map[string]part{} // the first user message, once fetched
	)
	for {
		page, err := store.BranchBefore(ctx, sid, before, limit)
		if err != nil {
			return window{}, err
		}
		read = append(page, read...)
		if len(page) == 0 || page[0].ParentID == "" {
			return whole(read), nil
		}
		w, ok, err := cut(ctx, store, read, budget, fixed+latestTokens, first)
		if err != nil || ok {
			return w, err
		}
		before, limit = page[0].ID, min(2*limit, lastPage)
	}
}

// whole is the window of a whole branch.
func whole(branch []sessions.Message) window {
	w := window{}
	if len(branch) > 0 {
		w.head = branch[len(branch)-1].ID
	}
	for _, p := range parts(branch) {
		if p.user && w.before.FirstUser == "" {
			w.before.FirstUser = p.id
		}
		w.msgs = append(w.msgs, p.msgs...)
		w.before.Messages += len(p.msgs)
		w.before.Tokens += p.tokens
	}
	return w
}

// cut looks, newest first, for a user message of read that carries its
// history_before and from which the first user message, the parts from it
// on and extra (the fixed costs and the latest message) are over budget.
// ok is false when there is none yet: read further.
func cut(ctx context.Context, store sessions.Store, read []sessions.Message, budget, extra int, first map[string]part) (window, bool, error) {
	// A page can start inside a part: parts leaves out the tool results
	// before the first other message read, which belong to an older part.
	ps := parts(read)
	tokens := 0 // of ps[k+1:]
	for k := len(ps) - 1; k >= 0; k-- {
		p := ps[k]
		if !p.user || p.before == nil {
			tokens += p.tokens
			continue
		}
		// p is the first user message itself, or the first one is older
		// (and p is one of the parts that may be left out).
		fu, own := p, 0
		if id := p.before.FirstUser; id != "" {
			own = p.tokens
			var ok bool
			if fu, ok = first[id]; !ok {
				m, err := store.GetMessage(ctx, id)
				if err != nil {
					return window{}, false, fmt.Errorf("read the first user message: %w", err)
				}
				if m.Role != sessions.RoleUser {
					return window{}, false, fmt.Errorf("message %q, named the first user message by %q, is a %s message: the stored history is inconsistent", id, p.id, m.Role)
				}
				fu = makePart(m, nil)
				first[id] = fu
			}
		}
		if extra+fu.tokens+own+tokens <= budget {
			tokens += p.tokens
			continue
		}
		w := window{head: read[len(read)-1].ID, before: *p.before}
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
