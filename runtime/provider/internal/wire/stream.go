package wire

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/openprogram/openprogram/runtime/provider"
)

// Events is what Stream reads of an SDK's event stream.
type Events[E any] interface {
	Next() bool
	Current() E
	Err() error
	Close() error
}

// Stream is the plumbing of one streamed request, the same for every
// provider: a done ctx or params that cannot be built end it before it is
// sent; open sends it on a context bounded by the idle timeout idle (see
// StartIdle), each reads every event; the stream's error is classified by
// classify, a ctx done meanwhile is provider.Cancelled, and a stream that
// ended without done saying the reply is complete is a ClassNetwork error
// saying unfinished.
func Stream[P, E any](ctx context.Context, idle time.Duration, params func() (P, error),
	open func(context.Context, P) Events[E], each func(E), classify func(context.Context, error) *provider.Error,
	done func() bool, unfinished string) error {
	if ctx.Err() != nil {
		return provider.Cancelled(ctx)
	}
	p, err := params()
	if err != nil {
		return &provider.Error{Class: provider.ClassInvalidRequest, Err: err}
	}
	ctx, timer := StartIdle(ctx, idle)
	defer timer.Stop()
	events := open(ctx, p)
	defer events.Close()
	for events.Next() {
		timer.Touch()
		each(events.Current())
	}
	if err := events.Err(); err != nil {
		return classify(ctx, err)
	}
	if ctx.Err() != nil {
		return provider.Cancelled(ctx)
	}
	if !done() {
		return &provider.Error{Class: provider.ClassNetwork, Err: errors.New(unfinished)}
	}
	return nil
}

// Reply gathers a streamed reply: its text, passed on to onDelta as it
// comes, and its tool calls, whose arguments come in pieces.
type Reply struct {
	onDelta func(provider.Delta)
	text    strings.Builder
	calls   []*Call
}

// NewReply returns a Reply passing text on to onDelta (nil: nobody).
func NewReply(onDelta func(provider.Delta)) *Reply { return &Reply{onDelta: onDelta} }

// Call is a tool call of a Reply being streamed.
type Call struct {
	ID, Name string
	Args     strings.Builder
}

// Text adds s ("" is nothing) to the reply's text.
func (r *Reply) Text(s string) {
	if s == "" {
		return
	}
	r.text.WriteString(s)
	if r.onDelta != nil {
		r.onDelta(provider.Delta{Text: s})
	}
}

// NewCall starts the reply's next tool call.
func (r *Reply) NewCall(id, name string) *Call {
	c := &Call{ID: id, Name: name}
	r.calls = append(r.calls, c)
	return c
}

// Response is the reply gathered, with stop and usage: a call whose
// arguments are empty gets {}.
func (r *Reply) Response(stop string, usage *provider.Usage) provider.Response {
	resp := provider.Response{Text: r.text.String(), StopReason: stop, Usage: usage}
	for _, c := range r.calls {
		args := strings.TrimSpace(c.Args.String())
		if args == "" {
			args = "{}"
		}
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(args)})
	}
	return resp
}
