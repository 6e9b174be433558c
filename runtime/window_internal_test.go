package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/sqlite"
)

// randomBranch grows a session the way turns and other writers do, with
// every shape the history must handle, and checks before each new user
// message that the history read backwards gives the same requests as the
// whole branch: the same messages sent, the same Omitted.
func TestWindowEqualsWholeBranch(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	own, err := authz.NewOwner("owner/install/0123456789abcdef", true, authz.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := authz.NewMCPClient("fedcba9876543210", "owner/install/0123456789abcdef", authz.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	speakers := []authz.Authority{own.Authority(), cl.Authority()}
	tools := []provider.ToolSpec{{Name: "t", Description: "a tool", InputSchema: json.RawMessage(`{"type":"object"}`)}}
	const system = "the system prompt"
	fixed := estimateFixed(system, tools)

	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 7))
		sid := fmt.Sprintf("s%d", seed)
		if _, err := store.CreateSession(ctx, sessions.Session{ID: sid}); err != nil {
			t.Fatal(err)
		}
		text := func(what string) string {
			n := []int{5, 60, 400, 3000}[rng.IntN(4)]
			return what + strings.Repeat("x", n)
		}
		head := ""
		appendChain := func(msgs ...sessions.NewMessage) {
			saved, err := store.AppendMessages(ctx, sid, head, msgs, true)
			if err != nil {
				t.Fatal(err)
			}
			head = saved[len(saved)-1].ID
		}
		call := 0
		for turn := range 60 {
			// Now and then a message written by something else: no
			// history_before, no authority, a system message, a result
			// without its call.
			if rng.IntN(6) == 0 {
				switch rng.IntN(3) {
				case 0:
					appendChain(sessions.NewMessage{Role: sessions.RoleUser, Content: text("foreign ")})
				case 1:
					appendChain(sessions.NewMessage{Role: sessions.RoleSystem, Content: text("system ")})
				default:
					appendChain(sessions.NewMessage{Role: sessions.RoleTool, Content: text("orphan "),
						Metadata: metadata{ToolCallID: "nobody"}.encode()})
				}
			}
			budget := []int{0, 60, 300, 1500, 6000, 40000}[rng.IntN(6)]
			auth := speakers[rng.IntN(2)]
			latest := provider.Message{Role: provider.RoleUser, Content: modelText(fmt.Sprintf("question %d", turn), &auth)}
			r := &Runtime{opts: Options{Store: store}}
			w, err := r.readWindow(ctx, sid, budget, fixed, latest)
			if err != nil {
				t.Fatal(err)
			}
			branch, err := store.Branch(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			if w.head != lastID(branch) {
				t.Fatalf("seed %d turn %d: head %q, want %q", seed, turn, w.head, lastID(branch))
			}
			// The turn's own steps: none, or calls with their results.
			var steps [][]provider.Message
			for range rng.IntN(3) {
				call++
				id := fmt.Sprintf("own%d", call)
				steps = append(steps, []provider.Message{
					{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}}},
					{Role: provider.RoleTool, ToolCallID: id, Content: text("own result ")},
				})
			}
			all := append(history(branch), latest)
			msgs := append(append([]provider.Message{}, w.msgs...), latest)
			for step := 0; ; step++ {
				wantSent, wantOm := fitHistory(system, tools, all, budget)
				gotSent, gotOm := fitWindow(system, tools, msgs, budget, w.unread)
				if diff := cmp.Diff(wantSent, gotSent); diff != "" {
					t.Fatalf("seed %d turn %d step %d budget %d: messages sent (-whole +window):\n%s", seed, turn, step, budget, diff)
				}
				if diff := cmp.Diff(wantOm, gotOm); diff != "" {
					t.Fatalf("seed %d turn %d step %d budget %d: omitted (-whole +window):\n%s", seed, turn, step, budget, diff)
				}
				if step == len(steps) {
					break
				}
				all = append(all, steps[step]...)
				msgs = append(msgs, steps[step]...)
			}
			// The turn's user message, as the turn loop stores it, and
			// its chain.
			meta := metadata{Authority: &auth}
			if w.before != (prefix{}) {
				meta.Before = &w.before
			}
			appendChain(sessions.NewMessage{Role: sessions.RoleUser, Content: fmt.Sprintf("question %d", turn), Metadata: meta.encode()})
			var chain []sessions.NewMessage
			for range rng.IntN(4) {
				call++
				id := fmt.Sprintf("c%d", call)
				if rng.IntN(5) == 0 {
					id = "again" // ids repeat across turns
				}
				calls := []toolCallData{{ID: id, Name: "t", Arguments: json.RawMessage(`{}`)}}
				if rng.IntN(4) == 0 {
					calls = append(calls, toolCallData{ID: id + "-unanswered", Name: "t", Arguments: json.RawMessage(`{}`)})
				}
				chain = append(chain,
					sessions.NewMessage{Role: sessions.RoleAssistant, Content: []string{"", "calling"}[rng.IntN(2)], Metadata: metadata{ToolCalls: calls}.encode()},
					sessions.NewMessage{Role: sessions.RoleTool, Content: text("result "), Metadata: metadata{ToolCallID: id, ToolName: "t"}.encode()})
			}
			if rng.IntN(5) == 0 {
				chain = append(chain, sessions.NewMessage{Role: sessions.RoleAssistant, Content: "Turn failed: x", Metadata: metadata{Failed: true}.encode()})
			} else {
				chain = append(chain, sessions.NewMessage{Role: sessions.RoleAssistant, Content: text("answer ")})
			}
			appendChain(chain...)
		}
	}
}
