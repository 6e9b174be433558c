package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

var allowanceTests = []test{
	{"AllowAndList", testAllowAndList},
	{"AllowIsPerSession", testAllowIsPerSession},
	{"AllowUnknownSession", testAllowUnknownSession},
	{"AllowInvalidTool", testAllowInvalidTool},
	{"AllowGoesWithSession", testAllowGoesWithSession},
	{"AllowSeenByAnotherHandle", testAllowSeenByAnotherHandle},
}

func mustAllowances(t *testing.T, s sessions.Store, id string) []string {
	t.Helper()
	got, err := s.SessionAllowances(t.Context(), id)
	if err != nil {
		t.Fatalf("SessionAllowances(%q): %v", id, err)
	}
	return got
}

// Standing approvals come back in tool name order; granting one twice
// keeps one.
func testAllowAndList(t *testing.T, h *harness) {
	s := h.store(t)
	mustCreate(t, s, sessions.Session{ID: "s1"})
	if got := mustAllowances(t, s, "s1"); got == nil || len(got) != 0 {
		t.Errorf("SessionAllowances of a new session = %#v, want an empty, non-nil list", got)
	}
	for _, tool := range []string{"write_file", "bash", "write_file"} {
		if err := s.AllowForSession(t.Context(), "s1", tool, owner); err != nil {
			t.Fatalf("AllowForSession(%s): %v", tool, err)
		}
	}
	if diff := cmp.Diff([]string{"bash", "write_file"}, mustAllowances(t, s, "s1")); diff != "" {
		t.Errorf("SessionAllowances (-want +got):\n%s", diff)
	}
}

func testAllowIsPerSession(t *testing.T, h *harness) {
	s := h.store(t)
	mustCreate(t, s, sessions.Session{ID: "s1"})
	mustCreate(t, s, sessions.Session{ID: "s2"})
	if err := s.AllowForSession(t.Context(), "s1", "bash", owner); err != nil {
		t.Fatal(err)
	}
	if got := mustAllowances(t, s, "s2"); len(got) != 0 {
		t.Errorf("another session's allowances = %v, want none", got)
	}
}

func testAllowUnknownSession(t *testing.T, h *harness) {
	s := h.store(t)
	for _, id := range []string{"nope", "bad\x00id"} {
		if err := s.AllowForSession(t.Context(), id, "bash", owner); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("AllowForSession(%q) = %v, want ErrNotFound", id, err)
		}
		if got := mustAllowances(t, s, id); len(got) != 0 {
			t.Errorf("SessionAllowances(%q) = %v, want none", id, got)
		}
	}
}

func testAllowInvalidTool(t *testing.T, h *harness) {
	s := h.store(t)
	mustCreate(t, s, sessions.Session{ID: "s1"})
	for _, tool := range []string{"", "a\x00b", strings.Repeat("t", sessions.MaxAllowedToolLen+1)} {
		if err := s.AllowForSession(t.Context(), "s1", tool, owner); !errors.Is(err, sessions.ErrInvalidAllowance) {
			t.Errorf("AllowForSession(%q) = %v, want ErrInvalidAllowance", tool, err)
		}
	}
	if err := s.AllowForSession(t.Context(), "s1", strings.Repeat("t", sessions.MaxAllowedToolLen), owner); err != nil {
		t.Errorf("AllowForSession of a %d-byte name: %v", sessions.MaxAllowedToolLen, err)
	}
	if got := mustAllowances(t, s, "s1"); len(got) != 1 {
		t.Errorf("allowances = %v, want only the valid one", got)
	}
}

// A deleted session drops its standing approvals: a new session with the
// same id starts with none.
func testAllowGoesWithSession(t *testing.T, h *harness) {
	s := h.store(t)
	mustCreate(t, s, sessions.Session{ID: "s1"})
	if err := s.AllowForSession(t.Context(), "s1", "bash", owner); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	if got := mustAllowances(t, s, "s1"); len(got) != 0 {
		t.Errorf("allowances of a deleted session = %v, want none", got)
	}
	mustCreate(t, s, sessions.Session{ID: "s1"})
	if got := mustAllowances(t, s, "s1"); len(got) != 0 {
		t.Errorf("allowances of a session re-created after delete = %v, want none", got)
	}
}

// A standing approval is in the database, not the handle: another
// process sees it.
func testAllowSeenByAnotherHandle(t *testing.T, h *harness) {
	a, b := h.pair(t)
	mustCreate(t, a, sessions.Session{ID: "s1"})
	if err := a.AllowForSession(t.Context(), "s1", "bash", owner); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"bash"}, mustAllowances(t, b, "s1")); diff != "" {
		t.Errorf("the other handle's allowances (-want +got):\n%s", diff)
	}
}

// CheckUpgradedAllowances checks, on a store just migrated to the version
// that added standing approvals, that sessionID (written before the
// upgrade) takes one and that it goes with the session; rows counts the
// backend's allowance rows, which must be none once the session is gone.
func CheckUpgradedAllowances(t *testing.T, st sessions.Store, sessionID string, rows func() int) {
	t.Helper()
	ctx := t.Context()
	if err := st.AllowForSession(ctx, sessionID, "bash", sessions.SourceAuthority{Source: "cli"}); err != nil {
		t.Fatalf("AllowForSession after the upgrade: %v", err)
	}
	if got, err := st.SessionAllowances(ctx, sessionID); err != nil || len(got) != 1 || got[0] != "bash" {
		t.Errorf("SessionAllowances after the upgrade = %v, %v; want [bash]", got, err)
	}
	if err := st.DeleteSession(ctx, sessionID); err != nil {
		t.Fatal(err)
	}
	if n := rows(); n != 0 {
		t.Errorf("allowance rows after deleting their session = %d; want 0", n)
	}
}
