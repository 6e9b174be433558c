package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// BenchTasks measures s, an empty TaskStore, for a backend's benchmark:
// Get is one GetTask of a working task among 1000 of its client's (what
// tasks/get costs the store); Life is the store writes a task adds to a
// turn (CreateTask with a cap, ClaimTask, one RenewTask with progress,
// CommitTask, FinishTask with a result).
func BenchTasks(b *testing.B, s sessions.TaskStore) {
	ctx := b.Context()
	for i := range 1000 {
		in := newTask(fmt.Sprintf("seed%04d", i), "c")
		if _, err := s.CreateTask(ctx, in); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Get", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.GetTask(ctx, "c", fmt.Sprintf("seed%04d", i%1000)); err != nil {
				b.Fatal(err)
			}
		}
	})
	result := json.RawMessage(`{"content":[{"type":"text","text":"done"}],"structuredContent":{"reply":"done"}}`)
	b.Run("Life", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			id := fmt.Sprintf("life%d", i)
			in := newTask(id, "l")
			in.MaxWorking = 4
			if _, err := s.CreateTask(ctx, in); err != nil {
				b.Fatal(err)
			}
			if _, err := s.ClaimTask(ctx, id, "r", time.Minute); err != nil {
				b.Fatal(err)
			}
			if _, err := s.RenewTask(ctx, id, "r", time.Minute, json.RawMessage(`{"progress":1}`)); err != nil {
				b.Fatal(err)
			}
			if _, err := s.CommitTask(ctx, id, "r"); err != nil {
				b.Fatal(err)
			}
			if _, err := s.FinishTask(ctx, id, "r", sessions.TaskCompleted, "", result); err != nil {
				b.Fatal(err)
			}
		}
	})
}
