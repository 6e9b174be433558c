package sqlite

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

// TestBranchRuns checks the run bookkeeping Branch relies on: consecutive
// turns of one session share a run, interleaved sessions and forks start
// new ones, and Branch is right in every case.
func TestBranchRuns(t *testing.T) {
	s := openTemp(t).(*Store)
	ctx := t.Context()
	for _, id := range []string{"a", "b"} {
		mustCreateSession(t, s, id)
	}
	turn := func(session, parent string, n int) []string {
		t.Helper()
		msgs := make([]sessions.NewMessage, n)
		for i := range msgs {
			msgs[i] = sessions.NewMessage{Role: sessions.RoleUser, Content: fmt.Sprint(session, i)}
		}
		got, err := s.AppendMessages(ctx, session, parent, msgs, true)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, n)
		for i, m := range got {
			out[i] = m.ID
		}
		return out
	}
	runs := func(session string) int {
		t.Helper()
		var n int
		if err := s.r.QueryRow(`SELECT count(DISTINCT run_start) FROM messages WHERE session_id = ?`, session).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	branchIDs := func(session string) []string {
		t.Helper()
		var out []string
		for _, m := range mustBranch(t, s, session) {
			out = append(out, m.ID)
		}
		return out
	}

	// Three turns of a alone: one run.
	var wantA []string
	for range 3 {
		parent := ""
		if len(wantA) > 0 {
			parent = wantA[len(wantA)-1]
		}
		wantA = append(wantA, turn("a", parent, 3)...)
	}
	if got := runs("a"); got != 1 {
		t.Errorf("consecutive turns of one session: %d runs, want 1", got)
	}
	// Interleaved turns of a and b: a new run per turn.
	var wantB []string
	for range 3 {
		parent := ""
		if len(wantB) > 0 {
			parent = wantB[len(wantB)-1]
		}
		wantB = append(wantB, turn("b", parent, 2)...)
		wantA = append(wantA, turn("a", wantA[len(wantA)-1], 2)...)
	}
	if got := runs("a"); got != 4 {
		t.Errorf("a after interleaving: %d runs, want 4", got)
	}
	if diff := cmp.Diff(wantA, branchIDs("a")); diff != "" {
		t.Errorf("Branch(a) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantB, branchIDs("b")); diff != "" {
		t.Errorf("Branch(b) (-want +got):\n%s", diff)
	}
	// A fork from the middle of the first run, right after a's last write.
	fork := turn("a", wantA[4], 2)
	if diff := cmp.Diff(append(append([]string{}, wantA[:5]...), fork...), branchIDs("a")); diff != "" {
		t.Errorf("Branch(a) after a fork mid-run (-want +got):\n%s", diff)
	}
	// Back to the old tip, then continue it.
	if err := s.SetHead(ctx, "a", wantA[len(wantA)-1]); err != nil {
		t.Fatal(err)
	}
	wantA = append(wantA, turn("a", wantA[len(wantA)-1], 1)...)
	if diff := cmp.Diff(wantA, branchIDs("a")); diff != "" {
		t.Errorf("Branch(a) back on the old tip (-want +got):\n%s", diff)
	}
}
