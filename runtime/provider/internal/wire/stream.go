package wire

import (
	"context"
	"encoding/json"
	"errors"
	"io"
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
// StartIdle), each reads every event into reply. A failure is classified
// by [StreamError], a ctx done meanwhile is provider.Cancelled, and a
// stream that ended before reply.Done is a ClassNetwork error saying
// unfinished.
func Stream[P, E any](ctx context.Context, idle time.Duration, params func() (P, error),
	open func(context.Context, P) Events[E], each func(E), classify func(error) *provider.Error,
	reply *Reply, unfinished string) error {
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
		return StreamError(ctx, err, classify)
	}
	if ctx.Err() != nil {
		return provider.Cancelled(ctx)
	}
	if !reply.Done {
		return &provider.Error{Class: provider.ClassNetwork, Err: errors.New(unfinished)}
	}
	return nil
}

// StreamError classifies the failure of a streamed request: a done ctx is
// provider.Cancelled, a [*provider.Error] (from [ErrorMiddleware]) is kept,
// then the SDK's own errors are classified by classify (nil: not one of
// its errors), and anything else by [TransportError], an EOF being a
// stream cut short.
func StreamError(ctx context.Context, err error, classify func(error) *provider.Error) *provider.Error {
	if ctx.Err() != nil {
		return provider.Cancelled(ctx)
	}
	if pe, ok := errors.AsType[*provider.Error](err); ok {
		return pe
	}
	if pe := classify(err); pe != nil {
		return pe
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return TransportError(ctx, err)
}

// Reply gathers a streamed reply: its text, passed on to onDelta as it
// comes, its tool calls, whose arguments come in pieces, and what the
// stream said of the reply as a whole.
type Reply struct {
	// Stop is the stop reason, as the API says it.
	Stop string
	// Done says the stream said the reply is complete.
	Done bool
	// Usage is the token count the server reported (nil: none).
	Usage *provider.Usage

	onDelta func(provider.Delta)
	text    strings.Builder
	calls   []*Call
	byIndex map[int64]*Call
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

// NewCall starts the reply's next tool call, which the stream numbers
// index: [Reply.Call] of index is this call until another starts there.
func (r *Reply) NewCall(index int64, id, name string) *Call {
	c := &Call{ID: id, Name: name}
	r.calls = append(r.calls, c)
	if r.byIndex == nil {
		r.byIndex = map[int64]*Call{}
	}
	r.byIndex[index] = c
	return c
}

// Call returns the tool call last started at the stream's index, or nil.
func (r *Reply) Call(index int64) *Call { return r.byIndex[index] }

// Response is the reply gathered: its stop reason is Stop through stops
// (the API's reasons to the [provider.StopEnd] kind; one not in stops is
// passed through), and a call whose arguments are empty gets {}.
func (r *Reply) Response(stops map[string]string) provider.Response {
	stop, ok := stops[r.Stop]
	if !ok {
		stop = r.Stop
	}
	resp := provider.Response{Text: r.text.String(), StopReason: stop, Usage: r.Usage}
	for _, c := range r.calls {
		args := strings.TrimSpace(c.Args.String())
		if args == "" {
			args = "{}"
		}
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(args)})
	}
	return resp
}
