package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

var messageTests = []test{
	{"AppendChainAndBranch", testAppendChainAndBranch},
	{"AppendFields", testAppendFields},
	{"AppendWithoutHeadMove", testAppendWithoutHeadMove},
	{"AppendValidation", testAppendValidation},
	{"ForkAndSetHead", testForkAndSetHead},
	{"SetHeadUnknown", testSetHeadUnknown},
	{"BranchUnknownAndEmpty", testBranchUnknownAndEmpty},
	{"DeepBranch", testDeepBranch},
	{"BranchBeforePages", testBranchBeforePages},
	{"BranchBeforeFork", testBranchBeforeFork},
	{"BranchBeforeRefused", testBranchBeforeRefused},
	{"UpdatedAtMonotonic", testUpdatedAtMonotonic},
	{"ConcurrentAppends", testConcurrentAppends},
	{"ConcurrentAppendsTwoHandles", testConcurrentAppendsTwoHandles},
}

var messageIDPattern = regexp.MustCompile(`^msg_[0-9a-f]{32}$`)

func testAppendChainAndBranch(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	turn1 := mustAppend(t, s, "s", "", true, user("q1"), assistant("a1"))
	turn2 := mustAppend(t, s, "s", turn1[1].ID, true,
		user("q2"),
		sessions.NewMessage{Role: sessions.RoleAssistant, Content: "calling a tool", Metadata: json.RawMessage(`{"tool_calls":[{"id":"c1","name":"read"}]}`)},
		sessions.NewMessage{Role: sessions.RoleTool, Content: "file text", Metadata: json.RawMessage(`{"tool_call_id":"c1"}`)},
		assistant("a2"))
	if turn1[0].ParentID != "" || turn1[1].ParentID != turn1[0].ID || turn2[0].ParentID != turn1[1].ID {
		t.Errorf("parents: %q %q %q, want chain", turn1[0].ParentID, turn1[1].ParentID, turn2[0].ParentID)
	}
	for i := 1; i < len(turn2); i++ {
		if turn2[i].ParentID != turn2[i-1].ID {
			t.Errorf("turn2[%d].ParentID = %q, want %q", i, turn2[i].ParentID, turn2[i-1].ID)
		}
	}
	sess := mustGetSession(t, s, "s")
	if sess.HeadID != turn2[3].ID {
		t.Errorf("HeadID = %q, want last appended %q", sess.HeadID, turn2[3].ID)
	}
	branch, err := s.Branch(ctx, "s")
	noErr(t, err, "Branch")
	want := append(append([]sessions.Message{}, turn1...), turn2...)
	if diff := cmp.Diff(want, branch, cmpOpts...); diff != "" {
		t.Errorf("Branch root first (-want +got):\n%s", diff)
	}
	for _, m := range want {
		got, err := s.GetMessage(ctx, m.ID)
		noErr(t, err, "GetMessage(%q)", m.ID)
		if diff := cmp.Diff(m, got, cmpOpts...); diff != "" {
			t.Errorf("GetMessage(%q) (-append +get):\n%s", m.ID, diff)
		}
	}
	if _, err := s.GetMessage(ctx, "msg_nope"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("GetMessage(unknown) error = %v, want ErrNotFound", err)
	}
}

func testAppendFields(t *testing.T, h *harness) {
	s := h.store(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	before := time.Now()
	meta := json.RawMessage(`{"speaker_kind":"client","speaker_id":"mcp/abc","n":12345678901234567890,"nested":{"b":[1,2],"a":"ü\u003c"}}`)
	got := mustAppend(t, s, "s", "", true,
		sessions.NewMessage{Role: sessions.RoleSystem, Content: "sys"},
		sessions.NewMessage{Role: sessions.RoleUser, Content: "multi\nline ünïcödé 🙂 '\"; DROP TABLE messages; --", Metadata: meta})
	seen := map[string]bool{}
	for i, m := range got {
		if !messageIDPattern.MatchString(m.ID) {
			t.Errorf("message %d ID = %q, want msg_ and 32 lowercase hex digits", i, m.ID)
		}
		if seen[m.ID] {
			t.Errorf("duplicate message ID %q", m.ID)
		}
		seen[m.ID] = true
		if m.SessionID != "s" {
			t.Errorf("message %d SessionID = %q, want s", i, m.SessionID)
		}
		if m.CreatedAt.Before(before.Add(-time.Second)) || m.CreatedAt.After(time.Now().Add(time.Second)) {
			t.Errorf("message %d CreatedAt = %v, want about now", i, m.CreatedAt)
		}
	}
	if got[0].Role != sessions.RoleSystem || got[0].Content != "sys" || len(got[0].Metadata) != 0 {
		t.Errorf("message 0 = %+v, want system/sys/no metadata", got[0])
	}
	stored, err := s.GetMessage(ctxT(t), got[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Content != "multi\nline ünïcödé 🙂 '\"; DROP TABLE messages; --" {
		t.Errorf("content not stored verbatim: %q", stored.Content)
	}
	if !jsonEqual(meta, stored.Metadata) {
		t.Errorf("Metadata = %s, want %s", stored.Metadata, meta)
	}
}

func testAppendWithoutHeadMove(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	first := mustAppend(t, s, "s", "", true, user("q"))
	before := mustGetSession(t, s, "s")
	side := mustAppend(t, s, "s", first[0].ID, false, assistant("draft"))
	after := mustGetSession(t, s, "s")
	if after.HeadID != first[0].ID {
		t.Errorf("HeadID after moveHead=false = %q, want unchanged %q", after.HeadID, first[0].ID)
	}
	if !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("UpdatedAt after moveHead=false = %v, want unchanged %v", after.UpdatedAt, before.UpdatedAt)
	}
	if _, err := s.GetMessage(ctx, side[0].ID); err != nil {
		t.Errorf("message appended without head move is not stored: %v", err)
	}
	wantBranch(t, s, "s", "after moveHead=false", first[0].ID)
}

// twoSessions creates sessions "s" and "other" with one message each, and
// returns s's head and the message of the other session.
func twoSessions(t *testing.T, s sessions.Store) (head, foreign sessions.Message) {
	t.Helper()
	mustCreate(t, s, sessions.Session{ID: "s"})
	mustCreate(t, s, sessions.Session{ID: "other"})
	return mustAppend(t, s, "s", "", true, user("q"))[0], mustAppend(t, s, "other", "", true, user("q"))[0]
}

func testAppendValidation(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	head, foreign := twoSessions(t, s)

	cases := []struct {
		name      string
		sessionID string
		parentID  string
		msgs      []sessions.NewMessage
		notFound  bool
	}{
		{"unknown session", "nope", "", []sessions.NewMessage{user("x")}, true},
		{"unknown parent", "s", "msg_00000000000000000000000000000000", []sessions.NewMessage{user("x")}, true},
		{"parent of another session", "s", foreign.ID, []sessions.NewMessage{user("x")}, true},
		{"no messages", "s", head.ID, nil, false},
		{"bad role", "s", head.ID, []sessions.NewMessage{{Role: "wizard", Content: "x"}}, false},
		{"bad role after good", "s", head.ID, []sessions.NewMessage{user("ok"), {Role: "", Content: "x"}}, false},
		{"invalid metadata", "s", head.ID, []sessions.NewMessage{{Role: sessions.RoleUser, Content: "x", Metadata: json.RawMessage(`{"a":`)}}, false},
	}
	for _, tc := range cases {
		_, err := s.AppendMessages(ctx, tc.sessionID, tc.parentID, tc.msgs, true)
		if err == nil {
			t.Errorf("AppendMessages(%s) succeeded, want an error", tc.name)
			continue
		}
		if tc.notFound && !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("AppendMessages(%s) error = %v, want ErrNotFound", tc.name, err)
		}
	}
	// Nothing of the failed appends was written.
	if got := mustGetSession(t, s, "s"); got.HeadID != head.ID {
		t.Errorf("HeadID after failed appends = %q, want %q", got.HeadID, head.ID)
	}
	wantBranch(t, s, "s", "after failed appends", head.ID)
}

func testForkAndSetHead(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	trunk := mustAppend(t, s, "s", "", true, user("q1"), assistant("a1"))
	left := mustAppend(t, s, "s", trunk[1].ID, true, user("left q"), assistant("left a"))
	// Regenerate: fork from the first user message.
	right := mustAppend(t, s, "s", trunk[0].ID, true, assistant("a1 again"))
	// A second root in the same session.
	root2 := mustAppend(t, s, "s", "", false, user("fresh start"))

	check := func(what string, want ...string) {
		t.Helper()
		wantBranch(t, s, "s", what, want...)
		if got := mustGetSession(t, s, "s").HeadID; got != want[len(want)-1] {
			t.Errorf("HeadID %s = %q, want %q", what, got, want[len(want)-1])
		}
	}
	check("after fork", trunk[0].ID, right[0].ID)
	if err := s.SetHead(ctx, "s", left[1].ID); err != nil {
		t.Fatalf("SetHead(left tip) error: %v", err)
	}
	check("after SetHead(left tip)", trunk[0].ID, trunk[1].ID, left[0].ID, left[1].ID)
	if err := s.SetHead(ctx, "s", trunk[1].ID); err != nil {
		t.Fatal(err)
	}
	check("after SetHead(inner node)", trunk[0].ID, trunk[1].ID)
	if err := s.SetHead(ctx, "s", root2[0].ID); err != nil {
		t.Fatal(err)
	}
	check("after SetHead(second root)", root2[0].ID)
	// Appending under a non-head parent with moveHead forks from there.
	more := mustAppend(t, s, "s", left[1].ID, true, user("continue left"))
	check("after append on left tip", trunk[0].ID, trunk[1].ID, left[0].ID, left[1].ID, more[0].ID)
}

func testSetHeadUnknown(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	head, foreign := twoSessions(t, s)
	for _, tc := range []struct{ session, msg string }{
		{"s", "msg_00000000000000000000000000000000"},
		{"s", foreign.ID},
		{"s", ""},
		{"nope", head.ID},
	} {
		if err := s.SetHead(ctx, tc.session, tc.msg); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("SetHead(%q, %q) error = %v, want ErrNotFound", tc.session, tc.msg, err)
		}
	}
	if got := mustGetSession(t, s, "s").HeadID; got != head.ID {
		t.Errorf("HeadID after refused SetHead = %q, want %q", got, head.ID)
	}
}

func testBranchUnknownAndEmpty(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	if _, err := s.Branch(ctx, "nope"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Branch(unknown session) error = %v, want ErrNotFound", err)
	}
	mustCreate(t, s, sessions.Session{ID: "s"})
	got, err := s.Branch(ctx, "s")
	if err != nil || len(got) != 0 {
		t.Errorf("Branch(session without head) = %d messages, %v; want none, nil", len(got), err)
	}
	// Messages appended without a head move leave the branch empty.
	mustAppend(t, s, "s", "", false, user("q"))
	got, err = s.Branch(ctx, "s")
	if err != nil || len(got) != 0 {
		t.Errorf("Branch(head never moved) = %d messages, %v; want none, nil", len(got), err)
	}
}

func testDeepBranch(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "deep"})
	const depth = 10000
	msgs := make([]sessions.NewMessage, 0, depth/2)
	for i := range depth / 2 {
		msgs = append(msgs, sessions.NewMessage{Role: []string{sessions.RoleUser, sessions.RoleAssistant}[i%2], Content: fmt.Sprintf("m%d", i)})
	}
	first := mustAppend(t, s, "deep", "", true, msgs...)
	second := mustAppend(t, s, "deep", first[len(first)-1].ID, true, msgs...)
	// A fork off the middle does not disturb the branch.
	mustAppend(t, s, "deep", first[100].ID, false, user("fork"))
	branch, err := s.Branch(ctx, "deep")
	noErr(t, err, "Branch(10000 deep)")
	want := append(ids(first), ids(second)...)
	if diff := cmp.Diff(want, ids(branch)); diff != "" {
		t.Fatalf("Branch(10000 deep) ids (-want +got):\n%s", diff)
	}
	if branch[depth-1].Content != fmt.Sprintf("m%d", depth/2-1) || branch[0].ParentID != "" {
		t.Errorf("Branch ends = %q/%q, want m0 root first and m%d last", branch[0].Content, branch[depth-1].Content, depth/2-1)
	}
	// A page from the head of a deep branch is its newest messages.
	page, err := s.BranchBefore(ctx, "deep", "", 50)
	noErr(t, err, "BranchBefore(10000 deep, 50)")
	if diff := cmp.Diff(want[depth-50:], ids(page)); diff != "" {
		t.Errorf("BranchBefore(10000 deep, head, 50) ids (-want +got):\n%s", diff)
	}
	page, err = s.BranchBefore(ctx, "deep", branch[100].ID, 1000)
	noErr(t, err, "BranchBefore(10000 deep, 101st, 1000)")
	if diff := cmp.Diff(want[:100], ids(page)); diff != "" {
		t.Errorf("BranchBefore(10000 deep, 101st, 1000) ids (-want +got):\n%s", diff)
	}
}

func testUpdatedAtMonotonic(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	// A session whose updated_at is in the future (clock skew between
	// processes) must not move backwards on the next turn.
	future := time.Now().Add(time.Hour)
	prev := mustCreate(t, s, sessions.Session{ID: "s", UpdatedAt: future}).UpdatedAt
	parent := ""
	for i := range 5 {
		m := mustAppend(t, s, "s", parent, true, user(fmt.Sprint(i)))
		parent = m[0].ID
		got := mustGetSession(t, s, "s").UpdatedAt
		if got.Before(prev) {
			t.Fatalf("turn %d: UpdatedAt went backwards %v -> %v", i, prev, got)
		}
		prev = got
	}
	if err := s.SetHead(ctx, "s", parent); err != nil {
		t.Fatal(err)
	}
	if got := mustGetSession(t, s, "s").UpdatedAt; got.Before(prev) {
		t.Errorf("SetHead: UpdatedAt went backwards %v -> %v", prev, got)
	}
}

// appendConcurrently runs workers goroutines, each appending perWorker
// two-message turns to the shared session "s" through stores[w%len].
func appendConcurrently(t *testing.T, stores []sessions.Store, workers, perWorker int) {
	t.Helper()
	ctx := ctxT(t)
	for _, st := range stores[:1] {
		mustCreate(t, st, sessions.Session{ID: "s"})
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	tips := make([][]string, workers)
	for w := range workers {
		wg.Go(func() {
			st := stores[w%len(stores)]
			parent := ""
			for i := range perWorker {
				got, err := st.AppendMessages(ctx, "s", parent, []sessions.NewMessage{user(fmt.Sprintf("w%d q%d", w, i)), assistant(fmt.Sprintf("w%d a%d", w, i))}, true)
				if err != nil {
					errs <- fmt.Errorf("worker %d append %d: %w", w, i, err)
					return
				}
				parent = got[1].ID
				tips[w] = append(tips[w], parent)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	// Every worker's chain is intact and the head is one worker's last tip.
	head := mustGetSession(t, stores[0], "s").HeadID
	var headOwner = -1
	for w := range workers {
		if tips[w][perWorker-1] == head {
			headOwner = w
		}
	}
	if headOwner < 0 {
		t.Fatalf("HeadID %q is not any worker's last message", head)
	}
	branch, err := stores[len(stores)-1].Branch(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if len(branch) != 2*perWorker {
		t.Fatalf("Branch has %d messages, want %d", len(branch), 2*perWorker)
	}
	for i := range perWorker {
		if got, want := branch[2*i+1].ID, tips[headOwner][i]; got != want {
			t.Fatalf("Branch[%d] = %q, want worker %d's %q", 2*i+1, got, headOwner, want)
		}
	}
	for w := range workers {
		for _, id := range tips[w] {
			if _, err := stores[0].GetMessage(ctx, id); err != nil {
				t.Fatalf("GetMessage(%q) of worker %d: %v", id, w, err)
			}
		}
	}
}

func testConcurrentAppends(t *testing.T, h *harness) {
	appendConcurrently(t, []sessions.Store{h.store(t)}, 8, 20)
}

func testConcurrentAppendsTwoHandles(t *testing.T, h *harness) {
	a, b := h.pair(t)
	appendConcurrently(t, []sessions.Store{a, b}, 8, 20)
}

// readBackwards pages through the active branch of session sid with
// BranchBefore, limit messages at a time, and returns it root first.
func readBackwards(t *testing.T, s sessions.Store, sid string, limit int) []sessions.Message {
	t.Helper()
	var all []sessions.Message
	before := ""
	for pages := 0; ; pages++ {
		page, err := s.BranchBefore(ctxT(t), sid, before, limit)
		noErr(t, err, "BranchBefore(%q, %q, %d)", sid, before, limit)
		if len(page) > limit {
			t.Fatalf("BranchBefore(%q, %q, %d) = %d messages, over the limit", sid, before, limit, len(page))
		}
		for i := 1; i < len(page); i++ {
			if page[i].ParentID != page[i-1].ID {
				t.Fatalf("page message %d does not follow %d", i, i-1)
			}
		}
		if len(page) > 0 && len(all) > 0 && all[0].ParentID != page[len(page)-1].ID {
			t.Fatalf("page before %q ends with %q, not that message's parent %q", before, page[len(page)-1].ID, all[0].ParentID)
		}
		all = append(page, all...)
		if len(page) == 0 || page[0].ParentID == "" {
			if len(page) == limit || len(page) == 0 {
				// The next page of a root is empty.
				if more, err := s.BranchBefore(ctxT(t), sid, all[0].ID, limit); err != nil || len(more) != 0 {
					t.Fatalf("BranchBefore(root) = %d messages, %v; want none", len(more), err)
				}
			}
			return all
		}
		if pages > 100000 {
			t.Fatal("BranchBefore never reached the root")
		}
		before = page[0].ID
	}
}

func testBranchBeforePages(t *testing.T, h *harness) {
	s := h.store(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	mustCreate(t, s, sessions.Session{ID: "other"})
	// Turns of several messages, interleaved with another session's
	// appends, with metadata, and a fork that is not the active branch.
	parent, otherParent := "", ""
	for i := range 12 {
		msgs := []sessions.NewMessage{user(fmt.Sprintf("q%d", i))}
		for j := range i % 4 {
			msgs = append(msgs, sessions.NewMessage{Role: sessions.RoleTool, Content: fmt.Sprintf("r%d.%d", i, j),
				Metadata: json.RawMessage(fmt.Sprintf(`{"tool_call_id":"c%d"}`, j))})
		}
		msgs = append(msgs, assistant(fmt.Sprintf("a%d", i)))
		got := mustAppend(t, s, "s", parent, true, msgs...)
		if i == 5 {
			mustAppend(t, s, "s", got[0].ID, false, user("fork"), assistant("fork answer"))
		}
		parent = got[len(got)-1].ID
		if i%3 == 0 {
			otherParent = mustAppend(t, s, "other", otherParent, true, user("elsewhere"))[0].ID
		}
	}
	want, err := s.Branch(ctxT(t), "s")
	noErr(t, err, "Branch")
	for _, limit := range []int{1, 2, 3, 7, len(want) - 1, len(want), len(want) + 5} {
		got := readBackwards(t, s, "s", limit)
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("BranchBefore pages of %d (-Branch +pages):\n%s", limit, diff)
		}
	}
	// A page from the middle holds the messages before it, newest last.
	mid := want[10]
	page, err := s.BranchBefore(ctxT(t), "s", mid.ID, 4)
	noErr(t, err, "BranchBefore(middle)")
	if diff := cmp.Diff(want[6:10], page, cmpOpts...); diff != "" {
		t.Errorf("BranchBefore(middle, 4) (-want +got):\n%s", diff)
	}
}

func testBranchBeforeFork(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	mustCreate(t, s, sessions.Session{ID: "s"})
	trunk := mustAppend(t, s, "s", "", true, user("q1"), assistant("a1"), user("q2"))
	left := mustAppend(t, s, "s", trunk[1].ID, false, user("left"), assistant("left answer"))
	// A page before a message off the active branch is that message's own
	// ancestry, whatever the head.
	page, err := s.BranchBefore(ctx, "s", left[1].ID, 10)
	noErr(t, err, "BranchBefore(fork tip)")
	if diff := cmp.Diff([]string{trunk[0].ID, trunk[1].ID, left[0].ID}, ids(page)); diff != "" {
		t.Errorf("BranchBefore(fork tip) (-want +got):\n%s", diff)
	}
	// From the head, it follows SetHead.
	if err := s.SetHead(ctx, "s", left[1].ID); err != nil {
		t.Fatal(err)
	}
	page, err = s.BranchBefore(ctx, "s", "", 10)
	noErr(t, err, "BranchBefore(head on the fork)")
	if diff := cmp.Diff([]string{trunk[0].ID, trunk[1].ID, left[0].ID, left[1].ID}, ids(page)); diff != "" {
		t.Errorf("BranchBefore(head on the fork) (-want +got):\n%s", diff)
	}
}

func testBranchBeforeRefused(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	head, foreign := twoSessions(t, s)
	for _, tc := range []struct{ session, before string }{
		{"nope", ""},
		{"nope", head.ID},
		{"s", foreign.ID},
		{"s", "msg_00000000000000000000000000000000"},
		{"s\x00", ""},
		{"s", "msg_\x00"},
	} {
		if got, err := s.BranchBefore(ctx, tc.session, tc.before, 10); !errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("BranchBefore(%q, %q) = %d messages, %v; want ErrNotFound", tc.session, tc.before, len(got), err)
		}
	}
	for _, limit := range []int{0, -1} {
		if _, err := s.BranchBefore(ctx, "s", "", limit); err == nil || errors.Is(err, sessions.ErrNotFound) {
			t.Errorf("BranchBefore(limit %d) error = %v, want a refused limit", limit, err)
		}
	}
	// Before a root, and in a session without a head: nothing, no error.
	if got, err := s.BranchBefore(ctx, "s", head.ID, 10); err != nil || len(got) != 0 {
		t.Errorf("BranchBefore(root) = %d messages, %v; want none, nil", len(got), err)
	}
	mustCreate(t, s, sessions.Session{ID: "empty"})
	mustAppend(t, s, "empty", "", false, user("never the head"))
	if got, err := s.BranchBefore(ctx, "empty", "", 10); err != nil || got == nil || len(got) != 0 {
		t.Errorf("BranchBefore(no head) = %#v, %v; want empty, nil", got, err)
	}
}
