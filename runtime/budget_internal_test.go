package runtime

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/runtime/provider"
)

// BenchmarkFitHistory10k fits a conversation of 10,000 messages (2,500
// turns of user, tool call, tool result, answer, 2,000 bytes each) into an
// 8,000-token window.
func BenchmarkFitHistory10k(b *testing.B) {
	text := strings.Repeat("x", 2000)
	msgs := make([]provider.Message, 0, 10001)
	for i := range 2500 {
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			provider.Message{Role: provider.RoleUser, Content: text},
			provider.Message{Role: provider.RoleAssistant, Content: text, ToolCalls: []provider.ToolCall{{ID: id, Name: "memory_search", Arguments: json.RawMessage(`{"query":"q"}`)}}},
			provider.Message{Role: provider.RoleTool, Content: text, ToolCallID: id, ToolName: "memory_search"},
			provider.Message{Role: provider.RoleAssistant, Content: text})
	}
	msgs = append(msgs, provider.Message{Role: provider.RoleUser, Content: "latest"})
	budget := historyBudget(8000, 0)
	b.ReportAllocs()
	for b.Loop() {
		out, om := fitHistory(DefaultSystemPrompt, nil, msgs, budget)
		if om == nil || len(out) == 0 {
			b.Fatal("nothing left out")
		}
	}
}

func TestFitHistoryCases(t *testing.T) {
	long := strings.Repeat("y", 6000)
	call := func(id string) provider.Message {
		return provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}}}
	}
	result := func(id, content string) provider.Message {
		return provider.Message{Role: provider.RoleTool, ToolCallID: id, Content: content}
	}
	user := func(s string) provider.Message { return provider.Message{Role: provider.RoleUser, Content: s} }
	msgs := []provider.Message{user("first"), call("a"), result("a", long), {Role: provider.RoleAssistant, Content: "ok"}, user("latest")}
	full := estimateFixed("sys", nil)
	for _, m := range msgs {
		full += estimateMessage(m)
	}

	// Fits: the same slice comes back, nothing recorded.
	out, om := fitHistory("sys", nil, msgs, full)
	if om != nil || len(out) != len(msgs) {
		t.Errorf("fitting history = %d messages, %+v; want all and nil", len(out), om)
	}
	// A little over: the old tool result is shortened, nothing dropped.
	out, om = fitHistory("sys", nil, msgs, full-10)
	if om == nil || om.Messages != 0 || om.Shortened != 1 || len(out) != len(msgs) || !strings.Contains(out[2].Content, "left out") {
		t.Errorf("slightly over = %d messages, %+v; want the result shortened", len(out), om)
	}
	if msgs[2].Content != long {
		t.Error("fitHistory changed its input")
	}
	// Far over: the call goes with its result; first and latest stay.
	out, om = fitHistory("sys", nil, msgs, 5)
	if om == nil || om.Messages != 3 || len(out) != 2 || out[0].Content != "first" || out[1].Content != "latest" {
		t.Errorf("far over = %+v, %+v; want first and latest only", out, om)
	}
	// Only the protected messages, over the budget: sent as they are.
	only := []provider.Message{user("first"), user("latest")}
	if out, om = fitHistory("sys", nil, only, 1); om != nil || len(out) != 2 {
		t.Errorf("protected only = %d messages, %+v; want both and nil", len(out), om)
	}
	// No budget: untouched.
	if out, om = fitHistory("sys", nil, msgs, 0); om != nil || len(out) != len(msgs) {
		t.Errorf("no budget = %d messages, %+v", len(out), om)
	}
}

func TestHistoryBudget(t *testing.T) {
	for _, c := range []struct{ ctx, out, want int }{{0, 0, 0}, {8000, 0, 6000}, {8000, 1000, 7000}, {8000, 7000, 4000}} {
		if got := historyBudget(c.ctx, c.out); got != c.want {
			t.Errorf("historyBudget(%d, %d) = %d, want %d", c.ctx, c.out, got, c.want)
		}
	}
}

func TestShortenedNoteLen(t *testing.T) {
	for _, n := range []int{0, 9, 10, 99, 100, 123456} {
		if got, want := shortenedNoteLen(n), len(shortenedNote(n)); got != want {
			t.Errorf("shortenedNoteLen(%d) = %d, want %d", n, got, want)
		}
	}
}
