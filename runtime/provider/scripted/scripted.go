// Package scripted is a deterministic model provider that replays a JSON
// script of assistant turns, for tests and offline demos. Every text reply it
// gives starts with "[scripted] ", so nobody mistakes it for a model.
//
// A script:
//
//	{"turns": [
//	  {"text": "Let me look.", "tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]},
//	  {"text": "The README says hello.", "delay_ms": 20},
//	  {"error": {"class": "rate_limit", "message": "slow down", "retry_after_ms": 1000}}
//	]}
//
// Each model call consumes the next turn. text is the reply, streamed word by
// word; tool_calls (optional id, name, arguments object) are the calls the
// model asks for; delay_ms (optional) is waited before each streamed word, or
// once before a reply without text, and the wait ends when the context does;
// error (optional) makes the call fail with a [provider.Error] of that class
// instead. When the script runs out, every further call replies
// [Exhausted].
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/openprogram/openprogram/runtime/provider"
)

// Prefix starts every text reply.
const Prefix = "[scripted] "

// Exhausted is the reply once the script has no turns left.
const Exhausted = Prefix + "script exhausted"

// Script is a parsed script.
type Script struct {
	Turns []Turn `json:"turns"`
}

// Turn is one scripted assistant reply.
type Turn struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	DelayMS   int        `json:"delay_ms,omitempty"`
	Error     *Failure   `json:"error,omitempty"`
	// Usage is the token count the reply reports (nil: none).
	Usage *provider.Usage `json:"usage,omitempty"`
}

// ToolCall is one scripted tool call. An empty ID becomes "call_<n>", n
// counting the provider's calls from 1; empty Arguments become {}.
type ToolCall struct {
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Failure makes a turn fail. Class is a [provider.Class] value ("auth",
// "rate_limit", "context_length", "server", "network", "invalid_request").
type Failure struct {
	Class        string `json:"class"`
	Message      string `json:"message,omitempty"`
	RetryAfterMS int    `json:"retry_after_ms,omitempty"`
}

// Parse reads a script and checks it: every tool call has a name and
// object arguments, delays are not negative, and failure classes are known.
func Parse(data []byte) (*Script, error) {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("parse script: %w", err)
	}
	for i, t := range s.Turns {
		if t.DelayMS < 0 {
			return nil, fmt.Errorf("script turn %d: delay_ms is negative", i)
		}
		for j, c := range t.ToolCalls {
			if strings.TrimSpace(c.Name) == "" {
				return nil, fmt.Errorf("script turn %d, tool call %d: name is empty", i, j)
			}
			if len(c.Arguments) > 0 {
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(c.Arguments, &obj); err != nil || obj == nil {
					return nil, fmt.Errorf("script turn %d, tool call %d: arguments must be a JSON object", i, j)
				}
			}
		}
		if t.Error != nil {
			switch provider.Class(t.Error.Class) {
			case provider.ClassAuth, provider.ClassRateLimit, provider.ClassContextLength,
				provider.ClassServer, provider.ClassNetwork, provider.ClassInvalidRequest:
			default:
				return nil, fmt.Errorf("script turn %d: unknown error class %q", i, t.Error.Class)
			}
		}
	}
	return &s, nil
}

// Load reads and parses the script file at path.
func Load(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Provider replays a Script. It is safe for concurrent use; concurrent
// calls consume turns in the order they take them. It keeps nothing of the
// requests it serves unless a [Recorder] is attached ([Provider.Record]):
// a server answering with it for days holds no growing record.
type Provider struct {
	script *Script

	mu    sync.Mutex
	next  int
	calls int
	rec   *Recorder
}

// New returns a Provider replaying s from its first turn.
func New(s *Script) *Provider {
	if s == nil {
		s = &Script{}
	}
	return &Provider{script: s}
}

// Name returns "scripted".
func (p *Provider) Name() string { return "scripted" }

// Record makes p keep a copy of every request it serves from now on, for
// tests to check what the model was shown, and returns the record. The
// record grows with every request: attach one only where it is read.
func (p *Provider) Record() *Recorder {
	rec := &Recorder{}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rec = rec
	return rec
}

// Recorder holds copies of the requests a [Provider] served since
// [Provider.Record]. It is safe for concurrent use.
type Recorder struct {
	mu       sync.Mutex
	requests []provider.Request
}

// Requests returns copies of the recorded requests, oldest first.
func (r *Recorder) Requests() []provider.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]provider.Request, len(r.requests))
	for i, req := range r.requests {
		out[i] = cloneRequest(req)
	}
	return out
}

func (r *Recorder) add(req provider.Request) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, cloneRequest(req))
}

// Remaining returns the number of turns not yet consumed.
func (p *Provider) Remaining() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.script.Turns) - p.next
}

// Stream replays the next turn.
func (p *Provider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	if ctx.Err() != nil {
		return provider.Response{}, provider.Cancelled(ctx)
	}
	p.mu.Lock()
	p.rec.add(req)
	turn := Turn{Text: strings.TrimPrefix(Exhausted, Prefix)}
	if p.next < len(p.script.Turns) {
		turn = p.script.Turns[p.next]
		p.next++
	}
	firstCall := p.calls + 1
	p.calls += len(turn.ToolCalls)
	p.mu.Unlock()

	delay := time.Duration(turn.DelayMS) * time.Millisecond
	if turn.Error != nil {
		if err := wait(ctx, delay); err != nil {
			return provider.Response{}, err
		}
		return provider.Response{}, &provider.Error{
			Class:      provider.Class(turn.Error.Class),
			RetryAfter: time.Duration(turn.Error.RetryAfterMS) * time.Millisecond,
			Err:        errors.New(Prefix + nonEmpty(turn.Error.Message, "scripted failure")),
		}
	}

	var text strings.Builder
	if turn.Text != "" || len(turn.ToolCalls) == 0 {
		for i, w := range words(Prefix + turn.Text) {
			if i > 0 || delay > 0 {
				if err := wait(ctx, delay); err != nil {
					return provider.Response{}, err
				}
			}
			text.WriteString(w)
			if onDelta != nil {
				onDelta(provider.Delta{Text: w})
			}
		}
	} else if err := wait(ctx, delay); err != nil {
		return provider.Response{}, err
	}
	if ctx.Err() != nil {
		return provider.Response{}, provider.Cancelled(ctx)
	}

	resp := provider.Response{Text: text.String(), StopReason: provider.StopEnd, Usage: turn.Usage}
	for i, c := range turn.ToolCalls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", firstCall+i)
		}
		args := c.Arguments
		if len(args) == 0 {
			args = json.RawMessage(`{}`)
		}
		resp.ToolCalls = append(resp.ToolCalls, provider.ToolCall{ID: id, Name: c.Name, Arguments: append(json.RawMessage(nil), args...)})
	}
	if len(resp.ToolCalls) > 0 {
		resp.StopReason = provider.StopToolUse
	}
	return resp, nil
}

// words splits s into words, each keeping the spaces that follow it, so
// that the words concatenate back to s.
func words(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		j := i
		for j < len(s) && s[j] == ' ' {
			j++
		}
		out = append(out, s[:j])
		s = s[j:]
	}
	return out
}

func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		if ctx.Err() != nil {
			return provider.Cancelled(ctx)
		}
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return provider.Cancelled(ctx)
	case <-t.C:
		return nil
	}
}

func nonEmpty(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func cloneRequest(r provider.Request) provider.Request {
	c := r
	c.Messages = make([]provider.Message, len(r.Messages))
	for i, m := range r.Messages {
		m.ToolCalls = append([]provider.ToolCall(nil), m.ToolCalls...)
		c.Messages[i] = m
	}
	c.Tools = append([]provider.ToolSpec(nil), r.Tools...)
	return c
}
