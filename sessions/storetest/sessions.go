package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

var sessionTests = []test{
	{"CreateGet", testCreateGet},
	{"CreateDefaultsTimes", testCreateDefaultsTimes},
	{"CreateDuplicate", testCreateDuplicate},
	{"CreateRequiresID", testCreateRequiresID},
	{"GetUnknown", testGetUnknown},
	{"ListOrderAndLimit", testListOrderAndLimit},
	{"ListTieBreakByID", testListTieBreakByID},
	{"ListHidesArchived", testListHidesArchived},
	{"ListMovesOnActivity", testListMovesOnActivity},
	{"Update", testUpdate},
	{"UpdateUnknown", testUpdateUnknown},
	{"Delete", testDelete},
}

func testCreateGet(t *testing.T, h *harness) {
	s := h.store(t)
	created := time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC)
	in := sessions.Session{
		ID: "mcp_0123456789abcdef0123456789abcdef", AgentID: "main", Title: "first",
		Source: "mcp", CreatedAt: created, UpdatedAt: created.Add(time.Second),
	}
	got := mustCreate(t, s, in)
	if diff := cmp.Diff(in, got, cmpOpts...); diff != "" {
		t.Errorf("CreateSession returned (-want +got):\n%s", diff)
	}
	got = mustGetSession(t, s, in.ID)
	if diff := cmp.Diff(in, got, cmpOpts...); diff != "" {
		t.Errorf("GetSession(%q) (-want +got):\n%s", in.ID, diff)
	}
	if got.HeadID != "" {
		t.Errorf("GetSession(%q).HeadID = %q, want empty for a new session", in.ID, got.HeadID)
	}
	archived := mustCreate(t, s, sessions.Session{ID: "arch", Archived: true})
	if !archived.Archived || !mustGetSession(t, s, "arch").Archived {
		t.Errorf("CreateSession(Archived: true) did not store Archived")
	}
}

func testCreateDefaultsTimes(t *testing.T, h *harness) {
	s := h.store(t)
	before := time.Now()
	got := mustCreate(t, s, sessions.Session{ID: "s1", HeadID: "ignored"})
	after := time.Now()
	for name, ts := range map[string]time.Time{"CreatedAt": got.CreatedAt, "UpdatedAt": got.UpdatedAt} {
		if ts.Before(before.Add(-time.Second)) || ts.After(after.Add(time.Second)) {
			t.Errorf("CreateSession with zero %s = %v, want about now (%v)", name, ts, before)
		}
	}
	if !got.CreatedAt.Equal(got.UpdatedAt) {
		t.Errorf("CreateSession with zero times: CreatedAt %v != UpdatedAt %v", got.CreatedAt, got.UpdatedAt)
	}
	if got.HeadID != "" || mustGetSession(t, s, "s1").HeadID != "" {
		t.Errorf("CreateSession kept a caller HeadID; a new session has no head")
	}
}

func testCreateDuplicate(t *testing.T, h *harness) {
	s := h.store(t)
	mustCreate(t, s, sessions.Session{ID: "dup", Title: "one"})
	_, err := s.CreateSession(ctxT(t), sessions.Session{ID: "dup", Title: "two"})
	if !errors.Is(err, sessions.ErrExists) {
		t.Fatalf("CreateSession(duplicate) error = %v, want ErrExists", err)
	}
	if got := mustGetSession(t, s, "dup"); got.Title != "one" {
		t.Errorf("duplicate CreateSession changed the title to %q", got.Title)
	}
}

func testCreateRequiresID(t *testing.T, h *harness) {
	s := h.store(t)
	if _, err := s.CreateSession(ctxT(t), sessions.Session{Title: "no id"}); err == nil {
		t.Fatal("CreateSession(empty ID) succeeded, want an error")
	}
}

func testGetUnknown(t *testing.T, h *harness) {
	s := h.store(t)
	if _, err := s.GetSession(ctxT(t), "nope"); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("GetSession(unknown) error = %v, want ErrNotFound", err)
	}
}

func testListOrderAndLimit(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 30 {
		id := fmt.Sprintf("s%02d", i)
		// Creation order differs from update order: updated_at decides.
		up := base.Add(time.Duration((i*7)%30) * time.Minute)
		mustCreate(t, s, sessions.Session{ID: id, CreatedAt: base, UpdatedAt: up})
	}
	for m := 29; m >= 0; m-- {
		for i := range 30 {
			if (i*7)%30 == m {
				want = append(want, fmt.Sprintf("s%02d", i))
			}
		}
	}
	for _, limit := range []int{1, 10, 30, 100} {
		got, err := s.ListSessions(ctx, limit)
		noErr(t, err, "ListSessions(%d)", limit)
		w := want[:min(limit, len(want))]
		if diff := cmp.Diff(w, sessionIDs(got)); diff != "" {
			t.Errorf("ListSessions(%d) ids (-want +got):\n%s", limit, diff)
		}
	}
	got, err := s.ListSessions(ctx, 0)
	if err != nil || len(got) != 0 {
		t.Errorf("ListSessions(0) = %d sessions, %v; want none, nil", len(got), err)
	}
	full, err := s.ListSessions(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mustGetSession(t, s, want[0]), full[0], cmpOpts...); diff != "" {
		t.Errorf("ListSessions entries must be complete sessions (-get +list):\n%s", diff)
	}
}

func testListTieBreakByID(t *testing.T, h *harness) {
	s := h.store(t)
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"b", "a", "d", "c"} {
		mustCreate(t, s, sessions.Session{ID: id, CreatedAt: at, UpdatedAt: at})
	}
	got, err := s.ListSessions(ctxT(t), 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"d", "c", "b", "a"}, sessionIDs(got)); diff != "" {
		t.Errorf("ListSessions with equal updated_at: ids (-want +got), want id descending:\n%s", diff)
	}
}

func testListHidesArchived(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 6 {
		mustCreate(t, s, sessions.Session{ID: fmt.Sprintf("s%d", i), UpdatedAt: base.Add(time.Duration(i) * time.Hour), Archived: i%2 == 1})
	}
	got, err := s.ListSessions(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s4", "s2", "s0"}, sessionIDs(got)); diff != "" {
		t.Errorf("ListSessions hides archived (-want +got):\n%s", diff)
	}
	// The limit counts visible sessions only.
	got, err = s.ListSessions(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s4", "s2"}, sessionIDs(got)); diff != "" {
		t.Errorf("ListSessions(2) (-want +got):\n%s", diff)
	}
	yes, no := true, false
	if _, err := s.UpdateSession(ctx, "s4", sessions.SessionUpdate{Archived: &yes}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateSession(ctx, "s5", sessions.SessionUpdate{Archived: &no}); err != nil {
		t.Fatal(err)
	}
	got, err = s.ListSessions(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"s5", "s2", "s0"}, sessionIDs(got)); diff != "" {
		t.Errorf("ListSessions after archive s4 / unarchive s5 (-want +got):\n%s", diff)
	}
}

func testListMovesOnActivity(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	old := time.Now().Add(-time.Hour)
	for i := range 3 {
		mustCreate(t, s, sessions.Session{ID: fmt.Sprintf("s%d", i), UpdatedAt: old.Add(time.Duration(i) * time.Minute)})
	}
	msgs := mustAppend(t, s, "s0", "", true, user("hi"))
	got, _ := s.ListSessions(ctx, 100)
	if diff := cmp.Diff([]string{"s0", "s2", "s1"}, sessionIDs(got)); diff != "" {
		t.Errorf("after a turn on s0, ListSessions (-want +got):\n%s", diff)
	}
	// Appending without moving the head is not activity on the list.
	mustAppend(t, s, "s1", "", false, user("draft"))
	got, _ = s.ListSessions(ctx, 100)
	if diff := cmp.Diff([]string{"s0", "s2", "s1"}, sessionIDs(got)); diff != "" {
		t.Errorf("after AppendMessages(moveHead=false) on s1, ListSessions (-want +got):\n%s", diff)
	}
	side := mustAppend(t, s, "s2", "", true, user("x"))
	if err := s.SetHead(ctx, "s2", side[0].ID); err != nil {
		t.Fatal(err)
	}
	got, _ = s.ListSessions(ctx, 100)
	if diff := cmp.Diff([]string{"s2", "s0", "s1"}, sessionIDs(got)); diff != "" {
		t.Errorf("after SetHead on s2, ListSessions (-want +got):\n%s", diff)
	}
	s0 := mustGetSession(t, s, "s0")
	if s0.HeadID != msgs[0].ID {
		t.Errorf("s0 head = %q, want %q", s0.HeadID, msgs[0].ID)
	}
}

func testUpdate(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	orig := mustCreate(t, s, sessions.Session{ID: "u", Title: "old", AgentID: "a", Source: "cli", UpdatedAt: time.Now().Add(-time.Hour)})
	title := "new title"
	got, err := s.UpdateSession(ctx, "u", sessions.SessionUpdate{Title: &title})
	noErr(t, err, "UpdateSession(title)")
	if got.Title != title || got.Archived || got.AgentID != "a" || got.Source != "cli" {
		t.Errorf("UpdateSession(title) = %+v, want only the title changed", got)
	}
	if got.UpdatedAt.Before(orig.UpdatedAt) {
		t.Errorf("UpdateSession moved updated_at backwards: %v -> %v", orig.UpdatedAt, got.UpdatedAt)
	}
	yes := true
	got, err = s.UpdateSession(ctx, "u", sessions.SessionUpdate{Archived: &yes})
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != title || !got.Archived {
		t.Errorf("UpdateSession(archived) = %+v, want title kept and archived", got)
	}
	if diff := cmp.Diff(got, mustGetSession(t, s, "u"), cmpOpts...); diff != "" {
		t.Errorf("UpdateSession result differs from GetSession (-update +get):\n%s", diff)
	}
	same, err := s.UpdateSession(ctx, "u", sessions.SessionUpdate{})
	noErr(t, err, "UpdateSession(no fields)")
	if same.Title != title || !same.Archived {
		t.Errorf("UpdateSession(no fields) = %+v, want unchanged", same)
	}
}

func testUpdateUnknown(t *testing.T, h *harness) {
	s := h.store(t)
	title := "x"
	if _, err := s.UpdateSession(ctxT(t), "nope", sessions.SessionUpdate{Title: &title}); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("UpdateSession(unknown) error = %v, want ErrNotFound", err)
	}
}

func testDelete(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "gone"})
	mustCreate(t, s, sessions.Session{ID: "kept"})
	msgs := mustAppend(t, s, "gone", "", true, user("a"), assistant("b"))
	kept := mustAppend(t, s, "kept", "", true, user("c"))
	if err := s.DeleteSession(ctx, "gone"); err != nil {
		t.Fatalf("DeleteSession error: %v", err)
	}
	if _, err := s.GetSession(ctx, "gone"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("GetSession after delete error = %v, want ErrNotFound", err)
	}
	for _, m := range msgs {
		if _, err := s.GetMessage(ctx, m.ID); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("GetMessage(%q) of a deleted session error = %v, want ErrNotFound", m.ID, err)
		}
	}
	if _, err := s.GetMessage(ctx, kept[0].ID); err != nil {
		t.Errorf("DeleteSession removed another session's message: %v", err)
	}
	if err := s.DeleteSession(ctx, "gone"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("DeleteSession twice error = %v, want ErrNotFound", err)
	}
	// The id is free again.
	mustCreate(t, s, sessions.Session{ID: "gone"})
	if b, err := s.Branch(ctx, "gone"); err != nil || len(b) != 0 {
		t.Errorf("Branch of a re-created session = %d msgs, %v; want empty", len(b), err)
	}
}
