package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// longSession stores turns turns of chars characters each: the user asks,
// the assistant calls a tool, the tool answers, the assistant replies. It
// returns the first user message's text.
func longSession(t testing.TB, store sessions.Store, sid string, turns, chars int) string {
	t.Helper()
	auth := client(t, authz.Scope{}).Authority()
	meta := func(m runtime.Metadata) json.RawMessage {
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	text := func(i int, what string) string {
		head := fmt.Sprintf("turn %d %s: ", i, what)
		return head + strings.Repeat("x", chars-len(head))
	}
	var chain []sessions.NewMessage
	for i := range turns {
		id := fmt.Sprintf("call_%d", i)
		chain = append(chain,
			sessions.NewMessage{Role: sessions.RoleUser, Content: text(i, "question"), Metadata: meta(runtime.Metadata{Authority: &auth, Source: authz.SourceMCP})},
			sessions.NewMessage{Role: sessions.RoleAssistant, Content: text(i, "plan"), Metadata: meta(runtime.Metadata{
				ToolCalls: []runtime.ToolCallData{{ID: id, Name: "memory_search", Arguments: json.RawMessage(`{"query":"q"}`)}}})},
			sessions.NewMessage{Role: sessions.RoleTool, Content: text(i, "result"), Metadata: meta(runtime.Metadata{ToolCallID: id, ToolName: "memory_search"})},
			sessions.NewMessage{Role: sessions.RoleAssistant, Content: text(i, "answer"), Metadata: meta(runtime.Metadata{StopReason: provider.StopEnd})},
		)
	}
	if _, err := store.AppendMessages(context.Background(), sid, "", chain, true); err != nil {
		t.Fatal(err)
	}
	return chain[0].Content
}

// requestLog is a provider that records every request, asks for one tool
// call with a long result, then answers.
type requestLog struct {
	mu   sync.Mutex
	reqs []provider.Request
}

func (l *requestLog) Name() string { return "log" }

func (l *requestLog) Stream(_ context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, req)
	if len(l.reqs) < 3 {
		return provider.Response{Text: "looking", StopReason: provider.StopToolUse, Usage: &provider.Usage{InputTokens: 5000, OutputTokens: 20},
			ToolCalls: []provider.ToolCall{{ID: fmt.Sprintf("new_%d", len(l.reqs)), Name: "memory_search", Arguments: json.RawMessage(`{"query":"q"}`)}}}, nil
	}
	return provider.Response{Text: "done", StopReason: provider.StopEnd, Usage: &provider.Usage{InputTokens: 5100, OutputTokens: 3}}, nil
}

// checkConversation fails unless every tool result follows the assistant
// message that called it and every call sent has its result.
func checkConversation(t *testing.T, msgs []provider.Message) {
	t.Helper()
	pending := map[string]bool{}
	for i, m := range msgs {
		switch {
		case m.Role == provider.RoleTool:
			if !pending[m.ToolCallID] {
				t.Errorf("message %d: tool result %q without its call", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		default:
			if len(pending) > 0 {
				t.Errorf("message %d: calls %v sent without their results", i, pending)
				clear(pending)
			}
			for _, c := range m.ToolCalls {
				pending[c.ID] = true
			}
		}
	}
	if len(pending) > 0 {
		t.Errorf("calls %v sent without their results", pending)
	}
}

func TestLongSessionFitsContext(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	first := longSession(t, store, "s1", 500, 2000)
	before := branch(t, store, "s1")

	const contextTokens = 8000
	bigResult := strings.Repeat("r", 30000) // the running turn's own long tool result
	rec := &recorder{}
	log := &requestLog{}
	rt := runtime.New(runtime.Options{Store: store, Provider: log, ContextTokens: contextTokens,
		Registry: registry(t, rec.tool("memory_search", authz.CapMemoryRead, func(context.Context) (tool.Result, error) {
			return tool.TextResult(bigResult), nil
		}))})
	res, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "the latest question"))
	if err != nil || res.Failed || res.Text != "done" {
		t.Fatalf("ProcessUserTurn = %+v, %v", res, err)
	}
	if len(log.reqs) != 3 {
		t.Fatalf("provider saw %d requests, want 3", len(log.reqs))
	}
	budget := runtime.HistoryBudget(contextTokens, 0)
	for i, req := range log.reqs {
		if n := runtime.EstimateRequest(req); n > budget {
			t.Errorf("request %d: estimated %d tokens, over the budget of %d", i, n, budget)
		}
		if !strings.Contains(req.System, runtime.SpeakerNote) {
			t.Errorf("request %d: the system prompt is missing", i)
		}
		var users []string
		for _, m := range req.Messages {
			if m.Role == provider.RoleUser {
				users = append(users, m.Content)
			}
		}
		if len(users) < 2 || !strings.Contains(users[0], first) || !strings.Contains(users[len(users)-1], `"content":"the latest question"`) ||
			!strings.Contains(users[len(users)-1], `"speaker_kind":"client"`) {
			t.Errorf("request %d: user messages do not start with the first one and end with the latest, in its envelope", i)
		}
		if len(req.Messages) > 100 {
			t.Errorf("request %d: %d messages sent", i, len(req.Messages))
		}
		checkConversation(t, req.Messages)
	}
	// The running turn's own calls and results are all in the last request.
	last := log.reqs[2].Messages
	var own []string
	for _, m := range last {
		if m.Role == provider.RoleTool && strings.HasPrefix(m.ToolCallID, "new_") {
			own = append(own, m.ToolCallID)
		}
	}
	if len(own) != 2 {
		t.Errorf("last request holds the turn's own results %v, want new_1 and new_2", own)
	}
	for _, m := range last {
		if m.Role == provider.RoleTool && strings.HasPrefix(m.ToolCallID, "new_") &&
			(len(m.Content) >= len(bigResult) || !strings.Contains(m.Content, "left out to fit the context window")) {
			t.Errorf("the turn's own long result %s was sent whole or without a note (%d bytes)", m.ToolCallID, len(m.Content))
		}
	}

	// The stored session is unchanged, the reply's metadata says what was
	// left out and what it cost.
	after := branch(t, store, "s1")
	if len(after) != len(before)+6 {
		t.Fatalf("branch grew from %d to %d messages, want +6", len(before), len(after))
	}
	for i := range before {
		if after[i].Content != before[i].Content {
			t.Fatalf("stored message %d changed", i)
		}
	}
	for _, m := range after[len(before)+1:] {
		if m.Role != sessions.RoleAssistant {
			continue
		}
		om := m.Meta.HistoryOmitted
		if om == nil || om.Messages < 1900 || om.Tokens <= 0 {
			t.Errorf("assistant %q: history_omitted = %+v, want most of the 2000 stored messages", m.Content, om)
		}
		if m.Meta.Usage == nil || m.Meta.Usage.InputTokens < 5000 {
			t.Errorf("assistant %q: usage = %+v, want the provider's report", m.Content, m.Meta.Usage)
		}
	}
}

// Without model.context_tokens the whole history is sent, and nothing is
// recorded as left out.
func TestNoBudgetSendsEverything(t *testing.T) {
	store := openStore(t, "")
	createSession(t, store, "s1")
	longSession(t, store, "s1", 20, 2000)
	log := &requestLog{}
	rec := &recorder{}
	rt := runtime.New(runtime.Options{Store: store, Provider: log, Registry: registry(t, rec.tool("memory_search", authz.CapMemoryRead, nil))})
	if _, err := rt.ProcessUserTurn(t.Context(), mcpRequest(t, "s1", "next")); err != nil {
		t.Fatal(err)
	}
	if n := len(log.reqs[0].Messages); n != 81 {
		t.Errorf("first request has %d messages, want all 81", n)
	}
	for _, m := range branch(t, store, "s1")[80:] {
		if m.Meta.HistoryOmitted != nil {
			t.Errorf("history_omitted = %+v without a budget", m.Meta.HistoryOmitted)
		}
	}
}
