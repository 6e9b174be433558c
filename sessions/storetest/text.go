package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// textTests pin U+0000 handling, which must not depend on the backend
// (PostgreSQL text cannot hold NUL; SQLite could): a write of text holding
// NUL is ErrInvalidText with nothing written, and a read of an id or path
// holding NUL is ErrNotFound (no stored one holds NUL).
var textTests = []test{
	{"NULWritesRefused", testNULWritesRefused},
	{"NULReadsNotFound", testNULReadsNotFound},
}

const nul = "a\x00b"

func wantInvalidText(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, sessions.ErrInvalidText) {
		t.Errorf("%s with U+0000: error = %v, want ErrInvalidText", what, err)
	}
}

func testNULWritesRefused(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	for _, in := range []sessions.Session{{ID: nul}, {ID: "s1", Title: nul}, {ID: "s2", AgentID: nul}, {ID: "s3", Source: nul}} {
		_, err := s.CreateSession(ctx, in)
		wantInvalidText(t, "CreateSession", err)
	}
	if got, err := s.ListSessions(ctx, 10); err != nil || len(got) != 0 {
		t.Errorf("after refused creates ListSessions = %d sessions, %v; want none", len(got), err)
	}

	mustCreate(t, s, sessions.Session{ID: "s", Title: "kept"})
	title := nul
	_, err := s.UpdateSession(ctx, "s", sessions.SessionUpdate{Title: &title})
	wantInvalidText(t, "UpdateSession title", err)
	if got := mustGetSession(t, s, "s"); got.Title != "kept" {
		t.Errorf("title after a refused update = %q, want kept", got.Title)
	}
	_, err = s.AppendMessages(ctx, "s", "", []sessions.NewMessage{user("fine"), user(nul)}, true)
	wantInvalidText(t, "AppendMessages content", err)
	_, err = s.AppendMessages(ctx, "s", "", []sessions.NewMessage{{Role: nul, Content: "x"}}, true)
	wantInvalidText(t, "AppendMessages role", err)
	if got, err := s.Branch(ctx, "s"); err != nil || len(got) != 0 {
		t.Errorf("Branch after refused appends = %d messages, %v; want none", len(got), err)
	}
	wantInvalidText(t, "AcquireTurn owner", s.AcquireTurn(ctx, "s", nul, time.Minute))

	for _, src := range []sessions.NewSource{
		{Path: nul, Content: "c", Authority: client},
		{Path: "p.md", Content: nul, Authority: client},
		{Path: "p.md", Content: "c", Authority: sessions.SourceAuthority{SpeakerID: nul}},
	} {
		_, err := s.AppendSource(ctx, src, -1)
		wantInvalidText(t, "AppendSource", err)
	}
	if st, err := s.MemoryStatus(ctx); err != nil || st.Sources != 0 {
		t.Errorf("after refused appends MemoryStatus = %+v, %v; want no sources", st, err)
	}

	// A keyed store may already hold its audit.keyed record.
	before, err := s.TailAudit(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []sessions.NewAuditRecord{{Type: nul, Origin: "o"}, {Type: "t", Origin: nul}, {Type: "t", Origin: "o", SessionID: nul}} {
		_, err := s.AppendAudit(ctx, r)
		wantInvalidText(t, "AppendAudit", err)
	}
	if recs, err := s.TailAudit(ctx, 10); err != nil || len(recs) != len(before) {
		t.Errorf("after refused audit appends TailAudit = %d records, %v; want the %d from before", len(recs), err, len(before))
	}
}

func testNULReadsNotFound(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	mustAppend(t, s, "s", "", true, user("q"))
	if _, err := s.AppendSource(ctx, sessions.NewSource{Path: "a.md", Content: "ab", Authority: client}, -1); err != nil {
		t.Fatal(err)
	}
	notFound := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("%s of an id with U+0000: error = %v, want ErrNotFound", what, err)
		}
	}
	_, err := s.GetSession(ctx, nul)
	notFound("GetSession", err)
	title := "t"
	_, err = s.UpdateSession(ctx, nul, sessions.SessionUpdate{Title: &title})
	notFound("UpdateSession", err)
	notFound("DeleteSession", s.DeleteSession(ctx, nul))
	_, err = s.GetMessage(ctx, nul)
	notFound("GetMessage", err)
	_, err = s.Branch(ctx, nul)
	notFound("Branch", err)
	notFound("SetHead", s.SetHead(ctx, "s", nul))
	_, err = s.AppendMessages(ctx, nul, "", []sessions.NewMessage{user("x")}, true)
	notFound("AppendMessages session", err)
	_, err = s.GetMemory(ctx, nul)
	notFound("GetMemory", err)

	if hits, err := s.GrepMemory(ctx, nul, "", true, 10); err != nil || len(hits) != 0 {
		t.Errorf("GrepMemory(U+0000) = %d hits, %v; want none, nil", len(hits), err)
	}
	if hits, err := s.SearchMemory(ctx, "ab", 10, nul); err != nil || len(hits) != 0 {
		t.Errorf("SearchMemory(prefix with U+0000) = %d hits, %v; want none, nil", len(hits), err)
	}
	if got, err := s.BrowseMemory(ctx, nul); err != nil || len(got) != 0 {
		t.Errorf("BrowseMemory(U+0000) = %d entries, %v; want none, nil", len(got), err)
	}
}
