package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/openprogram/openprogram/sessions"
)

var memoryTests = []test{
	{"AppendGetStatus", testMemoryAppendGet},
	{"Revisions", testMemoryRevisions},
	{"Promote", testMemoryPromote},
	{"ConcurrentRevisions", testMemoryConcurrentRevisions},
	{"SearchRanking", testSearchRanking},
	{"SearchTermsAndCase", testSearchTerms},
	{"SearchPrefix", testSearchPrefix},
	{"SearchTrustedLayer", testSearchTrusted},
	{"SearchTieOrder", testSearchTies},
	{"SearchHostileQueries", testSearchHostile},
	{"SearchScore", testSearchScore},
	{"SearchWords", testSearchWords},
	{"SearchPromoteAgain", testSearchPromoteAgain},
	{"SearchDeep", testSearchDeep},
	{"Grep", testGrep},
	{"GrepPrefixAndLimit", testGrepPrefixLimit},
	{"Browse", testBrowse},
}

var owner = sessions.SourceAuthority{
	SpeakerKind: "owner", SpeakerID: "owner", SpeakerDisplay: "Owner", PrincipalID: "principal-1",
	Tier: "owner", Interaction: "interactive", Source: "cli",
}

var client = sessions.SourceAuthority{
	SpeakerKind: "client", SpeakerID: "mcp/abc", SpeakerDisplay: "MCP client", PrincipalID: "principal-1",
	Tier: "paired", Interaction: "non-interactive", Source: "mcp",
}

func appendSource(t *testing.T, s sessions.Store, path, content string) sessions.Source {
	t.Helper()
	src, err := s.AppendSource(ctxT(t), sessions.NewSource{Path: path, Content: content, Authority: client}, -1)
	noErr(t, err, "AppendSource(%q)", path)
	return src
}

func testMemoryAppendGet(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	st, err := s.MemoryStatus(ctx)
	noErr(t, err, "MemoryStatus")
	if diff := cmp.Diff(sessions.MemoryStatus{}, st); diff != "" {
		t.Errorf("MemoryStatus of an empty store (-want +got):\n%s", diff)
	}
	before := time.Now()
	in := sessions.NewSource{Path: "people/alice.md", Content: "Alice likes tea.\nShe lives in Lyon.", Authority: owner}
	src, err := s.AppendSource(ctx, in, 0)
	noErr(t, err, "AppendSource")
	if src.ID <= 0 || src.Revision <= 0 {
		t.Errorf("AppendSource = ID %d, Revision %d; want both positive", src.ID, src.Revision)
	}
	if src.CreatedAt.Before(before.Add(-time.Second)) || src.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("AppendSource CreatedAt = %v, want about now", src.CreatedAt)
	}
	want := sessions.Source{ID: src.ID, Path: in.Path, Content: in.Content, Authority: owner, Revision: src.Revision, CreatedAt: src.CreatedAt}
	if diff := cmp.Diff(want, src, cmpOpts...); diff != "" {
		t.Errorf("AppendSource (-want +got):\n%s", diff)
	}
	second := appendSource(t, s, "people/alice.md", "Alice switched to coffee.")
	page, err := s.GetMemory(ctx, "people/alice.md")
	noErr(t, err, "GetMemory")
	wantPage := sessions.MemoryPage{Path: "people/alice.md", Sources: []sessions.Source{want, second}, Revision: second.Revision}
	if diff := cmp.Diff(wantPage, page, cmpOpts...); diff != "" {
		t.Errorf("GetMemory (-want +got):\n%s", diff)
	}
	if _, err := s.GetMemory(ctx, "people/bob.md"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("GetMemory(unknown) error = %v, want ErrNotFound", err)
	}
	if _, err := s.GetMemory(ctx, "people"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("GetMemory(a prefix, not a path) error = %v, want ErrNotFound", err)
	}
	if _, err := s.AppendSource(ctx, sessions.NewSource{Content: "no path"}, -1); err == nil {
		t.Errorf("AppendSource(empty path) succeeded, want an error")
	}
	st, _ = s.MemoryStatus(ctx)
	if diff := cmp.Diff(sessions.MemoryStatus{Sources: 2, Revision: second.Revision}, st); diff != "" {
		t.Errorf("MemoryStatus (-want +got):\n%s", diff)
	}
}

func testMemoryRevisions(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	a1, err := s.AppendSource(ctx, sessions.NewSource{Path: "a", Content: "one"}, 0)
	noErr(t, err, "AppendSource(new path, base 0)")
	if _, err := s.AppendSource(ctx, sessions.NewSource{Path: "b", Content: "x"}, 7); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("AppendSource(new path, base 7) error = %v, want ErrConflict", err)
	}
	b1, err := s.AppendSource(ctx, sessions.NewSource{Path: "b", Content: "one"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b1.Revision <= a1.Revision {
		t.Errorf("revision did not increase: %d then %d", a1.Revision, b1.Revision)
	}
	// Path a's revision is still a1's: b's writes do not conflict with a.
	a2, err := s.AppendSource(ctx, sessions.NewSource{Path: "a", Content: "two"}, a1.Revision)
	noErr(t, err, "AppendSource(a, base a1)")
	if a2.Revision <= b1.Revision {
		t.Errorf("revision did not increase: %d then %d", b1.Revision, a2.Revision)
	}
	// A writer still holding a1's revision has a stale view.
	if _, err := s.AppendSource(ctx, sessions.NewSource{Path: "a", Content: "stale"}, a1.Revision); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("AppendSource(stale base) error = %v, want ErrConflict", err)
	}
	page, err := s.GetMemory(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if page.Revision != a2.Revision || len(page.Sources) != 2 {
		t.Errorf("GetMemory(a) = revision %d with %d sources, want %d with 2 (the conflicting append wrote nothing)", page.Revision, len(page.Sources), a2.Revision)
	}
	st, _ := s.MemoryStatus(ctx)
	if st.Revision != a2.Revision || st.Sources != 3 {
		t.Errorf("MemoryStatus = %+v, want Revision %d and 3 sources", st, a2.Revision)
	}
}

func testMemoryPromote(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	first := appendSource(t, s, "notes/todo.md", "buy milk")
	second := appendSource(t, s, "notes/todo.md", "buy milk\nbuy bread")
	other := appendSource(t, s, "notes/other.md", "unrelated")

	if _, err := s.Promote(ctx, first.ID, first.Revision); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("Promote(base = stale revision) error = %v, want ErrConflict", err)
	}
	before := time.Now()
	page, err := s.Promote(ctx, second.ID, second.Revision)
	noErr(t, err, "Promote")
	if page.Revision <= other.Revision {
		t.Errorf("Promote revision %d, want above the latest %d", page.Revision, other.Revision)
	}
	want := sessions.TrustedPage{Path: "notes/todo.md", Content: "buy milk\nbuy bread", Revision: page.Revision, SourceID: second.ID, UpdatedAt: before}
	if diff := cmp.Diff(want, page, cmpopts.IgnoreFields(sessions.TrustedPage{}, "UpdatedAt")); diff != "" {
		t.Errorf("Promote (-want +got):\n%s", diff)
	}
	if page.UpdatedAt.Before(before.Add(-time.Second)) || page.UpdatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("Promote UpdatedAt = %v, want about now", page.UpdatedAt)
	}
	got, err := s.GetMemory(ctx, "notes/todo.md")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&page, got.Trusted, cmpOpts...); diff != "" {
		t.Errorf("GetMemory.Trusted (-promote +get):\n%s", diff)
	}
	if got.Revision != page.Revision || len(got.Sources) != 2 {
		t.Errorf("GetMemory = revision %d, %d sources; want %d, 2", got.Revision, len(got.Sources), page.Revision)
	}
	// Promoting an older source replaces the page (owner's choice), no check.
	again, err := s.Promote(ctx, first.ID, -1)
	if err != nil {
		t.Fatal(err)
	}
	if again.Content != "buy milk" || again.SourceID != first.ID || again.Revision <= page.Revision {
		t.Errorf("Promote(first, -1) = %+v, want its content, source and a newer revision", again)
	}
	if _, err := s.Promote(ctx, 999999, -1); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Promote(unknown source) error = %v, want ErrNotFound", err)
	}
	// A trusted page on its own keeps a path alive for GetMemory.
	st, _ := s.MemoryStatus(ctx)
	if diff := cmp.Diff(sessions.MemoryStatus{Sources: 3, TrustedPages: 1, Revision: again.Revision}, st); diff != "" {
		t.Errorf("MemoryStatus (-want +got):\n%s", diff)
	}
	// Appending after a promotion needs the promotion's revision.
	if _, err := s.AppendSource(ctx, sessions.NewSource{Path: "notes/todo.md", Content: "x"}, second.Revision); !errors.Is(err, sessions.ErrConflict) {
		t.Errorf("AppendSource(base before promotion) error = %v, want ErrConflict", err)
	}
	if _, err := s.AppendSource(ctx, sessions.NewSource{Path: "notes/todo.md", Content: "x"}, again.Revision); err != nil {
		t.Errorf("AppendSource(base = promotion revision) error = %v", err)
	}
}

func testMemoryConcurrentRevisions(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	base := appendSource(t, s, "shared", "v0")
	// Many writers race with the same base revision: exactly one wins.
	wins, _ := race(t, 8, "writer", sessions.ErrConflict, func(i int) error {
		_, err := s.AppendSource(ctx, sessions.NewSource{Path: "shared", Content: fmt.Sprintf("v%d", i+1)}, base.Revision)
		return err
	})
	if wins != 1 {
		t.Errorf("%d writers with the same base revision succeeded, want exactly 1", wins)
	}
}

func search(t *testing.T, s sessions.Store, query string, topK int, prefix string) []sessions.MemoryHit {
	t.Helper()
	hits, err := s.SearchMemory(ctxT(t), query, topK, prefix)
	noErr(t, err, "SearchMemory(%q, %d, %q)", query, topK, prefix)
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("SearchMemory(%q): hit %d score %v above hit %d score %v; want best first", query, i, hits[i].Score, i-1, hits[i-1].Score)
		}
	}
	return hits
}

func hitPaths(hits []sessions.MemoryHit) []string {
	return pluck(hits, func(h sessions.MemoryHit) string { return h.Path })
}

func testSearchRanking(t *testing.T, h *harness) {
	s := h.store(t)
	filler := strings.Repeat("lorem ipsum dolor sit amet consectetur adipiscing elit ", 12)
	appendSource(t, s, "animals/rare.md", filler+"zebra "+filler)
	dense := appendSource(t, s, "animals/dense.md", "zebra stripes zebra herd zebra")
	appendSource(t, s, "animals/none.md", "giraffe necks")
	hits := search(t, s, "zebra", 10, "")
	if diff := cmp.Diff([]string{"animals/dense.md", "animals/rare.md"}, hitPaths(hits)); diff != "" {
		t.Fatalf("SearchMemory(zebra) paths, best first (-want +got):\n%s", diff)
	}
	if hits[0].Layer != sessions.LayerSource || hits[0].SourceID != dense.ID {
		t.Errorf("top hit = layer %q source %d, want %q %d", hits[0].Layer, hits[0].SourceID, sessions.LayerSource, dense.ID)
	}
	if hits[0].Score <= hits[1].Score {
		t.Errorf("scores %v, %v: want the denser document strictly higher", hits[0].Score, hits[1].Score)
	}
	if !strings.Contains(strings.ToLower(hits[0].Snippet), "zebra") {
		t.Errorf("snippet %q does not show the match", hits[0].Snippet)
	}
	if got := search(t, s, "zebra", 1, ""); len(got) != 1 || got[0].Path != "animals/dense.md" {
		t.Errorf("SearchMemory(zebra, topK 1) = %v, want only the best hit", hitPaths(got))
	}
	if got := search(t, s, "okapi", 10, ""); len(got) != 0 {
		t.Errorf("SearchMemory(no match) = %v, want none", hitPaths(got))
	}
	if got := search(t, s, "   ", 10, ""); len(got) != 0 {
		t.Errorf("SearchMemory(blank) = %v, want none", hitPaths(got))
	}
}

func testSearchTerms(t *testing.T, h *harness) {
	s := h.store(t)
	appendSource(t, s, "both", "kettle boiling on the stove")
	appendSource(t, s, "one", "kettle cold")
	appendSource(t, s, "upper", "KETTLE BOILING LOUDLY")
	got := search(t, s, "boiling kettle", 10, "")
	less := func(a, b string) bool { return a < b }
	if diff := cmp.Diff([]string{"both", "upper"}, hitPaths(got), cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("SearchMemory(two terms) must match documents with all terms, any case (-want +got):\n%s", diff)
	}
	got = search(t, s, "Kettle", 10, "")
	if diff := cmp.Diff([]string{"both", "one", "upper"}, hitPaths(got), cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("SearchMemory(Kettle) (-want +got):\n%s", diff)
	}
}

func testSearchPrefix(t *testing.T, h *harness) {
	s := h.store(t)
	for _, p := range []string{"work/a.md", "work/b.md", "workshop/c.md", "home/d.md", "wo%k/e.md", "w_rk/f.md", "wxrk/g.md"} {
		appendSource(t, s, p, "quarterly planning notes")
	}
	less := func(a, b string) bool { return a < b }
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"work/", []string{"work/a.md", "work/b.md"}},
		{"work", []string{"work/a.md", "work/b.md", "workshop/c.md"}},
		{"", []string{"home/d.md", "w_rk/f.md", "wo%k/e.md", "work/a.md", "work/b.md", "workshop/c.md", "wxrk/g.md"}},
		{"wo%", []string{"wo%k/e.md"}},
		{"w_", []string{"w_rk/f.md"}},
		{"nothing/", nil},
	} {
		got := search(t, s, "planning", 20, tc.prefix)
		if diff := cmp.Diff(tc.want, hitPaths(got), cmpopts.SortSlices(less), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("SearchMemory(prefix %q) (-want +got):\n%s", tc.prefix, diff)
		}
	}
}

func testSearchTrusted(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	src := appendSource(t, s, "facts/sky.md", "the sky is cerulean today")
	if _, err := s.Promote(ctx, src.ID, -1); err != nil {
		t.Fatal(err)
	}
	hits := search(t, s, "cerulean", 10, "facts/")
	got := map[string]sessions.MemoryHit{}
	for _, h := range hits {
		got[h.Layer] = h
	}
	if len(hits) != 2 || got[sessions.LayerTrusted].Path != "facts/sky.md" || got[sessions.LayerSource].Path != "facts/sky.md" {
		t.Fatalf("SearchMemory after Promote = %+v, want one source hit and one trusted hit on facts/sky.md", hits)
	}
	if got[sessions.LayerTrusted].SourceID != src.ID {
		t.Errorf("trusted hit SourceID = %d, want the promoted source %d", got[sessions.LayerTrusted].SourceID, src.ID)
	}
}

// testSearchTies pins the order of equal scores, the same on every
// backend: trusted pages before sources, then source id ascending (oldest
// first), also where topK cuts through the ties and under a path prefix.
func testSearchTies(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	b := appendSource(t, s, "sea/b.md", "walrus tusk")
	a := appendSource(t, s, "sea/a.md", "walrus tusk")
	c := appendSource(t, s, "sea/c.md", "walrus tusk")
	if _, err := s.Promote(ctx, a.ID, -1); err != nil {
		t.Fatal(err)
	}
	type hit struct {
		Layer string
		ID    int64
	}
	all := []hit{{sessions.LayerTrusted, a.ID}, {sessions.LayerSource, b.ID}, {sessions.LayerSource, a.ID}, {sessions.LayerSource, c.ID}}
	for _, tc := range []struct {
		topK   int
		prefix string
		want   []hit
	}{
		{10, "", all},
		{2, "", all[:2]},
		{3, "sea/", all[:3]},
		{1, "sea/", all[:1]},
	} {
		var got []hit
		for _, h := range search(t, s, "walrus", tc.topK, tc.prefix) {
			got = append(got, hit{h.Layer, h.SourceID})
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("SearchMemory(walrus, topK %d, prefix %q): ties trusted first, then by source id (-want +got):\n%s",
				tc.topK, tc.prefix, diff)
		}
	}
}

func testSearchHostile(t *testing.T, h *harness) {
	s := h.store(t)
	appendSource(t, s, "x", `alpha beta "quoted" NEAR(gamma) c++ e-mail path:foo`)
	for _, q := range []string{
		`"`, `""`, `alpha"`, `NEAR(`, `alpha AND`, `OR`, `NOT alpha`, `*`, `alpha*`, `-alpha`, `^alpha`,
		`col:alpha`, `path:foo`, `(alpha`, `alpha)`, `{alpha}`, `'; DROP TABLE sources; --`, `c++`, `e-mail`,
		`alpha & beta`, `alpha | beta`, `!alpha`, `alpha <-> beta`, `\`, "\x00alpha", `ü`, `🙂`,
	} {
		if _, err := s.SearchMemory(ctxT(t), q, 5, ""); err != nil {
			t.Errorf("SearchMemory(%q) error: %v; queries are plain words, never syntax", q, err)
		}
	}
	if got := search(t, s, `"alpha"`, 5, ""); len(got) != 1 {
		t.Errorf(`SearchMemory("alpha" in quotes) = %d hits, want 1`, len(got))
	}
	if got := search(t, s, `NEAR(gamma)`, 5, ""); len(got) != 1 {
		t.Errorf(`SearchMemory(NEAR(gamma)) = %d hits, want 1 (words, not syntax)`, len(got))
	}
}

// testSearchScore pins the score itself, so that every backend ranks
// with the same numbers: BM25's term-frequency weight against a reference
// length of 100 words, 1 for a word once in such a document, summed over
// the query's words.
func testSearchScore(t *testing.T, h *harness) {
	s := h.store(t)
	appendSource(t, s, "dense", "zebra stripes zebra herd zebra")
	appendSource(t, s, "plain", strings.TrimSpace(strings.Repeat("word ", 99))+" zebra")
	got := map[string]float64{}
	for _, hit := range search(t, s, "zebra", 10, "") {
		got[hit.Path] = hit.Score
	}
	// 3 of 5 words: 22*100*3 / (10*100*3 + 3*100 + 9*5) = 1.9730; once in 100 words: 1.
	if diff := cmp.Diff(map[string]float64{"dense": 1.973, "plain": 1}, got); diff != "" {
		t.Errorf("SearchMemory(zebra) scores (-want +got):\n%s", diff)
	}
	// herd once in 5 words: 22*100 / (1000 + 300 + 45) = 1.6356.
	hits := search(t, s, "zebra herd", 10, "")
	if len(hits) != 1 || hits[0].Path != "dense" || hits[0].Score != 3.6086 {
		t.Errorf("SearchMemory(zebra herd) = %+v, want dense alone with score 1.973 + 1.6356", hits)
	}
}

// testSearchWords pins what a word is on every backend: case folds
// (Unicode too), and so do the accents of Latin letters, not the marks of
// other scripts; a word longer than the index keeps (64 bytes) matches
// only itself.
func testSearchWords(t *testing.T, h *harness) {
	s := h.store(t)
	appendSource(t, s, "accented", "CAFÉ au lait")
	appendSource(t, s, "plain", "cafe noir")
	appendSource(t, s, "kana", "かき が")
	long := strings.Repeat("x", 70)
	appendSource(t, s, "long-a", "id "+long+"a")
	appendSource(t, s, "long-b", "id "+long+"b")
	for _, tc := range []struct {
		query string
		want  []string
	}{
		// The shorter document weighs its word more.
		{"café", []string{"plain", "accented"}},
		{"Cafe", []string{"plain", "accented"}},
		{"lait", []string{"accented"}},
		{"が", []string{"kana"}},
		{"か", nil},
		{long + "A", []string{"long-a"}},
		{long, nil},
		{"caf", nil},
	} {
		got := hitPaths(search(t, s, tc.query, 10, ""))
		if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("SearchMemory(%.20q) (-want +got):\n%s", tc.query, diff)
		}
	}
}

// testSearchPromoteAgain: promoting another source to a path replaces the
// trusted page in search, and promoting the same source again changes
// nothing.
func testSearchPromoteAgain(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	first := appendSource(t, s, "facts/color.md", "the door is vermilion")
	second := appendSource(t, s, "facts/color.md", "the door is turquoise")
	for _, id := range []int64{first.ID, second.ID, second.ID} {
		if _, err := s.Promote(ctx, id, -1); err != nil {
			t.Fatal(err)
		}
	}
	layers := func(query string) []string {
		return pluck(search(t, s, query, 10, ""), func(h sessions.MemoryHit) string { return fmt.Sprintf("%s %d", h.Layer, h.SourceID) })
	}
	if diff := cmp.Diff([]string{fmt.Sprintf("source %d", first.ID)}, layers("vermilion")); diff != "" {
		t.Errorf("SearchMemory(the replaced page's word) (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{fmt.Sprintf("trusted %d", second.ID), fmt.Sprintf("source %d", second.ID)}, layers("turquoise")); diff != "" {
		t.Errorf("SearchMemory(the new page's word) (-want +got):\n%s", diff)
	}
	if st, err := s.MemoryStatus(ctx); err != nil || st.TrustedPages != 1 {
		t.Errorf("MemoryStatus = %+v, %v; want 1 trusted page", st, err)
	}
}

// testSearchDeep has more matches than one read of the index returns, with
// the best ones written last and under a prefix, and two words whose best
// documents differ: the order must still be exact.
func testSearchDeep(t *testing.T, h *harness) {
	s := h.store(t)
	filler := strings.Repeat("filler ", 40)
	var want []string
	for i := range 60 {
		appendSource(t, s, fmt.Sprintf("a/%02d", i), "gnu "+filler)
	}
	for i := range 5 {
		p := fmt.Sprintf("b/%02d", i)
		appendSource(t, s, p, strings.Repeat("gnu ", 5-i)+"yak "+strings.Repeat("yak ", i))
		want = append(want, p)
	}
	if got := hitPaths(search(t, s, "gnu", 5, "")); !cmp.Equal(want, got) {
		t.Errorf("SearchMemory(gnu, 5) = %v, want the denser documents written last %v", got, want)
	}
	if got := hitPaths(search(t, s, "gnu", 3, "b/")); !cmp.Equal(want[:3], got) {
		t.Errorf("SearchMemory(gnu, 3, b/) = %v, want %v", got, want[:3])
	}
	// gnu and yak together: only b/, where the sum of both weights decides.
	got := search(t, s, "yak gnu", 10, "")
	if len(got) != 5 {
		t.Fatalf("SearchMemory(yak gnu) = %v, want the 5 documents with both", hitPaths(got))
	}
	if got := search(t, s, "gnu", 100, ""); len(got) != 65 {
		t.Errorf("SearchMemory(gnu, 100) = %d hits, want all 65", len(got))
	}
}

func testGrep(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	a := appendSource(t, s, "b/notes.md", "first line\nTODO: call Bob\nnothing\ntodo: email 50%_off\n")
	b := appendSource(t, s, "a/plan.md", "todo later\r\nplain")
	if _, err := s.Promote(ctx, a.ID, -1); err != nil {
		t.Fatal(err)
	}
	grep := func(sub, prefix string, cs bool, limit int) []sessions.MemoryHit {
		t.Helper()
		hits, err := s.GrepMemory(ctx, sub, prefix, cs, limit)
		noErr(t, err, "GrepMemory(%q, %q, %v, %d)", sub, prefix, cs, limit)
		return hits
	}
	got := grep("todo", "", false, 100)
	want := []sessions.MemoryHit{
		{Layer: sessions.LayerSource, Path: "a/plan.md", SourceID: b.ID, Snippet: "todo later", Line: 1},
		{Layer: sessions.LayerTrusted, Path: "b/notes.md", SourceID: a.ID, Snippet: "TODO: call Bob", Line: 2},
		{Layer: sessions.LayerTrusted, Path: "b/notes.md", SourceID: a.ID, Snippet: "todo: email 50%_off", Line: 4},
		{Layer: sessions.LayerSource, Path: "b/notes.md", SourceID: a.ID, Snippet: "TODO: call Bob", Line: 2},
		{Layer: sessions.LayerSource, Path: "b/notes.md", SourceID: a.ID, Snippet: "todo: email 50%_off", Line: 4},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GrepMemory(todo, case-insensitive): path order, trusted first, line order (-want +got):\n%s", diff)
	}
	got = grep("TODO", "", true, 100)
	if diff := cmp.Diff([]sessions.MemoryHit{want[1], want[3]}, got); diff != "" {
		t.Errorf("GrepMemory(TODO, case-sensitive) (-want +got):\n%s", diff)
	}
	got = grep("%_", "", true, 100)
	if diff := cmp.Diff([]sessions.MemoryHit{want[2], want[4]}, got); diff != "" {
		t.Errorf("GrepMemory(%%_) treats wildcards literally (-want +got):\n%s", diff)
	}
	if got := grep("", "", false, 100); len(got) != 0 {
		t.Errorf("GrepMemory(empty) = %d hits, want none", len(got))
	}
	if got := grep("zzz", "", false, 100); len(got) != 0 {
		t.Errorf("GrepMemory(no match) = %d hits, want none", len(got))
	}
}

func testGrepPrefixLimit(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	for i := range 5 {
		appendSource(t, s, fmt.Sprintf("logs/day%d", i), "error one\nok\nerror two")
	}
	appendSource(t, s, "logs_old/x", "error three")
	appendSource(t, s, "logsX/y", "error four")
	hits, err := s.GrepMemory(ctx, "error", "logs/", false, 3)
	if err != nil {
		t.Fatal(err)
	}
	wantPaths := []string{"logs/day0", "logs/day0", "logs/day1"}
	if diff := cmp.Diff(wantPaths, hitPaths(hits)); diff != "" {
		t.Errorf("GrepMemory(limit 3, prefix logs/) (-want +got):\n%s", diff)
	}
	hits, err = s.GrepMemory(ctx, "error", "logs_", false, 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"logs_old/x"}, hitPaths(hits)); diff != "" {
		t.Errorf("GrepMemory(prefix logs_) treats _ literally (-want +got):\n%s", diff)
	}
	hits, err = s.GrepMemory(ctx, "error", "", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 12 {
		t.Errorf("GrepMemory(limit 0) = %d hits, want all 12 (0 means no limit)", len(hits))
	}
}

func testBrowse(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	if got, err := s.BrowseMemory(ctx, ""); err != nil || len(got) != 0 {
		t.Errorf("BrowseMemory(empty store) = %v, %v; want none", got, err)
	}
	appendSource(t, s, "proj/a.md", "x")
	a2 := appendSource(t, s, "proj/a.md", "y")
	b1 := appendSource(t, s, "proj/b.md", "z")
	appendSource(t, s, "proj_x/c.md", "w")
	appendSource(t, s, "other/d.md", "v")
	promoted, err := s.Promote(ctx, b1.ID, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.BrowseMemory(ctx, "proj/")
	noErr(t, err, "BrowseMemory")
	want := []sessions.MemoryEntry{
		{Path: "proj/a.md", Sources: 2, Revision: a2.Revision, UpdatedAt: a2.CreatedAt},
		{Path: "proj/b.md", Sources: 1, Trusted: true, Revision: promoted.Revision, UpdatedAt: promoted.UpdatedAt},
	}
	if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
		t.Errorf("BrowseMemory(proj/) (-want +got):\n%s", diff)
	}
	got, err = s.BrowseMemory(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"other/d.md", "proj/a.md", "proj/b.md", "proj_x/c.md"}, entryPaths(got)); diff != "" {
		t.Errorf("BrowseMemory(all) paths (-want +got):\n%s", diff)
	}
	got, _ = s.BrowseMemory(ctx, "proj_")
	if diff := cmp.Diff([]string{"proj_x/c.md"}, entryPaths(got)); diff != "" {
		t.Errorf("BrowseMemory(proj_) treats _ literally (-want +got):\n%s", diff)
	}
}

func entryPaths(es []sessions.MemoryEntry) []string {
	return pluck(es, func(e sessions.MemoryEntry) string { return e.Path })
}
