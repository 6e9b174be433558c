package fulltext

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/openprogram/openprogram/sessions"
)

func TestIndex(t *testing.T) {
	long := strings.Repeat("東", 30) // 90 bytes: cut to 63 on a rune boundary
	got := Index("Zebra zebra, ZEBRA herd " + long + "x " + long + "y")
	want := []Posting{
		{Term: "herd", Rank: -impact(1, 6)},
		{Term: "zebra", Rank: -impact(3, 6)},
		{Term: strings.Repeat("東", 21), Rank: -impact(2, 6)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Index: one posting per folded, cut term, in term order (-want +got):\n%s", diff)
	}
	if got := Index(" \n-- "); len(got) != 0 {
		t.Errorf("Index(no words) = %v, want none", got)
	}
}

func TestFold(t *testing.T) {
	for in, want := range map[string]string{
		"Café":     "cafe",
		"ÅNGSTRÖM": "angstrom",
		"x\u0301":  "x",
		"İstanbul": "istanbul",
		"Straße":   "straße",
		"が":        "が", // a mark on another script stays
		"\u0301":   "\u0301",
		"Ελληνικά": "ελληνικά",
		"plain":    "plain",
		"ﬁ":        "ﬁ", // compatibility forms are not decomposed
	} {
		if got := fold(in); got != want {
			t.Errorf("fold(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestImpact(t *testing.T) {
	if got := impact(1, refLength); got != Scale {
		t.Errorf("impact(1, reference length) = %d, want Scale %d", got, Scale)
	}
	if !(impact(3, 5) > impact(2, 5) && impact(2, 5) > impact(1, 5)) {
		t.Errorf("impact does not grow with the term frequency: %d %d %d", impact(1, 5), impact(2, 5), impact(3, 5))
	}
	if !(impact(1, 10) > impact(1, 200)) {
		t.Errorf("impact does not fall with the length: %d %d", impact(1, 10), impact(1, 200))
	}
	if got := impact(1_000_000, 1_000_000); got > maxImpact {
		t.Errorf("impact(10^6, 10^6) = %d, above maxImpact %d", got, maxImpact)
	}
	if got := impact(1, 1<<40); got != 1 {
		t.Errorf("impact of a word lost in a huge document = %d, want the floor 1", got)
	}
}

func TestScore(t *testing.T) {
	for _, tc := range []struct {
		query, content string
		ok             bool
	}{
		{"zebra", "a Zebra grazes", true},
		{"e-mail", "send an e mail", true},
		{"e-mail", "send an e-mail", true},
		{"e-mail", "mail an e", false},
		{"kettle boiling", "BOILING the kettle", true},
		{"kettle boiling", "the kettle", false},
		{"zeb", "zebra", false},
	} {
		_, ok := Parse(tc.query).Score(tc.content)
		if ok != tc.ok {
			t.Errorf("Parse(%q).Score(%q) matches = %v, want %v", tc.query, tc.content, ok, tc.ok)
		}
	}
	// A single word's score is its posting's impact.
	content := "stripes zebra herd zebra"
	score, _ := Parse("Zebra").Score(content)
	for _, p := range Index(content) {
		if p.Term == "zebra" && int64(-p.Rank) != score {
			t.Errorf("Score(zebra) = %d, posting impact %d: want equal", score, -p.Rank)
		}
	}
	// Words that share a cut term are told apart by the text.
	long := strings.Repeat("a", MaxTermBytes)
	if _, ok := Parse(long + "x").Score(long + "y"); ok {
		t.Errorf("a query word matched a different word with the same cut term")
	}
}

// memIndex is an in-memory backend: the postings of each layer sorted by
// (term, rank, id), read as the SQL backends read theirs.
type memIndex struct {
	docs     map[[2]int64]memDoc // (layer, id)
	postings [2][]memPosting
	unsorted [2]bool // postings added since the layer was last sorted
	reads    int     // Postings calls (rounds)
	fetched  int     // documents asked for
}

type memDoc struct{ path, content string }

type memPosting struct {
	term string
	rank int32
	id   int64
}

func (m *memIndex) add(layer int, id int64, path, content string) {
	if m.docs == nil {
		m.docs = map[[2]int64]memDoc{}
	}
	m.docs[[2]int64{int64(layer), id}] = memDoc{path, content}
	for _, p := range Index(content) {
		m.postings[layer] = append(m.postings[layer], memPosting{p.Term, p.Rank, id})
	}
	m.unsorted[layer] = true
}

// sorted returns the layer's postings in index order, sorting them once
// after adds (sorting on every add made building a corpus quadratic).
func (m *memIndex) sorted(layer int) []memPosting {
	if !m.unsorted[layer] {
		return m.postings[layer]
	}
	m.unsorted[layer] = false
	slices.SortFunc(m.postings[layer], func(a, b memPosting) int {
		if c := strings.Compare(a.term, b.term); c != 0 {
			return c
		}
		if a.rank != b.rank {
			return int(a.rank) - int(b.rank)
		}
		return int(a.id - b.id)
	})
	return m.postings[layer]
}

// under is memIndex read with a path prefix.
type under struct {
	m      *memIndex
	prefix string
}

func (m *memIndex) under(prefix string) Reader { return under{m, prefix} }

func (u under) Postings(_ context.Context, layer int, reqs []Request) ([][]Entry, error) {
	u.m.reads++
	out := make([][]Entry, len(reqs))
	for i, req := range reqs {
		for _, p := range u.m.sorted(layer) {
			if p.term != req.Term || p.rank < req.After.Rank || p.rank == req.After.Rank && p.id <= req.After.ID {
				continue
			}
			if d := u.m.docs[[2]int64{int64(layer), p.id}]; !strings.HasPrefix(d.path, u.prefix) {
				continue
			}
			out[i] = append(out[i], Entry{Rank: p.rank, ID: p.id})
			if len(out[i]) == req.N {
				break
			}
		}
	}
	return out, nil
}

func (u under) Documents(_ context.Context, layer int, ids []int64) ([]Document, error) {
	u.m.fetched += len(ids)
	var out []Document
	for _, id := range ids {
		if d, ok := u.m.docs[[2]int64{int64(layer), id}]; ok && strings.HasPrefix(d.path, u.prefix) {
			out = append(out, Document{ID: id, Path: d.path, Content: d.content})
		}
	}
	return out, nil
}

// brute scores every document, as a search without an index would.
func (m *memIndex) brute(query string, k int, prefix string) []sessions.MemoryHit {
	q := Parse(query)
	var hits []hit
	for key, d := range m.docs {
		if !strings.HasPrefix(d.path, prefix) {
			continue
		}
		if s, ok := q.Score(d.content); ok {
			hits = append(hits, hit{id: key[1], score: s, path: d.path, text: d.content, layer: int(key[0])})
		}
	}
	slices.SortFunc(hits, before)
	out := []sessions.MemoryHit{}
	for _, h := range hits[:min(k, len(hits))] {
		layer := sessions.LayerSource
		if h.layer == LayerTrusted {
			layer = sessions.LayerTrusted
		}
		out = append(out, sessions.MemoryHit{Layer: layer, Path: h.path, SourceID: h.id,
			Score: float64(h.score) / Scale, Snippet: excerpt(h.text, q)})
	}
	return out
}

// TestSearchMatchesBruteForce checks the threshold algorithm against
// scoring every document, on random corpora with many ties (a small
// vocabulary, short documents), phrases, prefixes and both layers.
func TestSearchMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := []string{"alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta",
		strings.Repeat("long", 20) + "a", strings.Repeat("long", 20) + "b"}
	corpora, large := sized(9, 42), sized(1, 3)
	for corpus := range corpora + large {
		m := &memIndex{}
		docs := 20 + rng.IntN(300)
		if corpus >= corpora {
			docs = 3000 // batches up to the largest
		}
		for id := range docs {
			var sb strings.Builder
			length := 1 + rng.IntN([]int{12, 60, 1}[corpus%3])
			if corpus%3 == 2 {
				length = 8 // one length: impacts tie by the thousand
			}
			for range length {
				// Zipf-like: low indexes far more often.
				sb.WriteString(vocab[min(rng.IntN(len(vocab)), rng.IntN(len(vocab)))])
				sb.WriteByte(' ')
			}
			layer := LayerSource
			if rng.IntN(5) == 0 {
				layer = LayerTrusted
			}
			m.add(layer, int64(id+1), fmt.Sprintf("p%d/%d", rng.IntN(4), id), sb.String())
		}
		for range 30 {
			var q []string
			for range 1 + rng.IntN(3) {
				w := vocab[rng.IntN(len(vocab))]
				if rng.IntN(4) == 0 {
					w += "-" + vocab[rng.IntN(len(vocab))] // a phrase
				}
				q = append(q, w)
			}
			query := strings.Join(q, " ")
			k := 1 + rng.IntN(25)
			prefix := []string{"", "", "p1/", "p3/1"}[rng.IntN(4)]
			got, err := Search(context.Background(), query, k, m.under(prefix))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(m.brute(query, k, prefix), got); diff != "" {
				t.Fatalf("corpus %d: Search(%q, %d, prefix %q) differs from scoring every document (-brute +search):\n%s",
					corpus, query, k, prefix, diff)
			}
		}
	}
}

// TestSearchReadsFewPostings pins the point of the index: a word every
// document contains costs one batch per layer, not a read of every match.
func TestSearchReadsFewPostings(t *testing.T) {
	m := &memIndex{}
	for id := range 5000 {
		m.add(LayerSource, int64(id+1), "notes", fmt.Sprintf("common word%d filler text here", id%97))
	}
	m.add(LayerSource, 9999, "notes", "common common")
	got, err := Search(context.Background(), "common", 10, m.under(""))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || got[0].SourceID != 9999 {
		t.Fatalf("Search(common) = %d hits, first %+v; want 10 with the denser document first", len(got), got[0])
	}
	if m.reads != 2 || m.fetched > firstBatch {
		t.Errorf("Search(common) read %d batches and %d documents, want 2 (one per layer) and at most %d",
			m.reads, m.fetched, firstBatch)
	}
}

// TestDone pins the stopping rule's tie case: an unread document can
// equal the bound only with each cursor's impact and an id above every
// cursor's, so it beats a k-th best of equal score with a higher id.
func TestDone(t *testing.T) {
	cursors := []Cursor{{Rank: -5, ID: 20}, {Rank: -5, ID: 30}}
	for _, tc := range []struct {
		last   hit
		unread int64
		want   bool
	}{
		{hit{score: 11, id: 99}, 0, true},  // above the bound
		{hit{score: 10, id: 30}, 0, true},  // at the bound, no unread id can be lower
		{hit{score: 10, id: 31}, 0, false}, // an unread document 31 could tie and win
		{hit{score: 9, id: 1}, 0, false},   // below the bound
		{hit{score: 10, id: 1}, 1, false},  // a term not read adds to the bound
	} {
		if got := done(tc.last, cursors, tc.unread); got != tc.want {
			t.Errorf("done(score %d id %d, unread %d) = %v, want %v", tc.last.score, tc.last.id, tc.unread, got, tc.want)
		}
	}
}

// sized is short, or full under -tags long: the number of random cases a
// randomised comparison draws.
func sized(short, full int) int {
	if longTests {
		return full
	}
	return short
}

// referenceWords is the definition eachWord implements faster.
func referenceWords(s string) []string {
	out := strings.FieldsFunc(s, func(r rune) bool { return !isWord(r) })
	for i, w := range out {
		out[i] = fold(w)
	}
	return out
}

// randomText draws from ASCII of both cases, separators, accented and
// non-Latin letters, combining marks, runes that fold to ASCII (Kelvin
// sign, dotted capital I) and invalid UTF-8.
func randomText(rng *rand.Rand, n int) string {
	pieces := []string{"a", "B", "z", "Q", "0", "9", " ", "-", ".", "\n", "É", "é", "ß", "東", "\u0301", "\u212a", "\u0130",
		"\xff", "\xe2\x82", "ab", "AB", "Ab"}
	var sb strings.Builder
	for range n {
		sb.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return sb.String()
}

func TestEachWordMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range sized(1000, 5000) {
		s := randomText(rng, rng.IntN(40))
		if diff := cmp.Diff(referenceWords(s), words(s), cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("words(%q) (-reference +got):\n%s", s, diff)
		}
	}
}

// TestScoreMatchesReference checks the one-pass shift-and matcher against
// the plain definition: every chunk a run of consecutive words, the score
// the sum of the impacts of each term's query words.
func TestScoreMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 4))
	vocab := []string{"a", "b", "ab", "AB", "é", "É", "\u212a"}
	pick := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, []string{" ", "-", "\n"}[rng.IntN(3)])
	}
	for range sized(4000, 20000) {
		content := pick(rng.IntN(12))
		query := pick(1+rng.IntN(2)) + " " + pick(1+rng.IntN(3))
		q := Parse(query)
		ws := referenceWords(content)
		wantOK := true
		for _, g := range q.groups {
			wantOK = wantOK && hasPhrase(ws, g)
		}
		var want int64
		for _, tm := range q.terms {
			tf := 0
			for _, w := range ws {
				if _, isQuery := q.words[w]; isQuery && term(w) == tm {
					tf++
				}
			}
			want += int64(impact(tf, len(ws)))
		}
		got, ok := q.Score(content)
		if ok != wantOK || ok && got != want {
			t.Fatalf("Parse(%q).Score(%q) = %d, %v; want %d, %v", query, content, got, ok, want, wantOK)
		}
	}
	// A chunk longer than one machine word of positions.
	long := strings.TrimSpace(strings.Repeat("x ", maxPhrase)) + " y"
	if _, ok := Parse(strings.ReplaceAll(long, " ", "-")).Score(long); !ok {
		t.Errorf("a %d-word chunk did not match its own text", maxPhrase+1)
	}
	if _, ok := Parse(strings.ReplaceAll(long, " ", "-")).Score("x " + long[:len(long)-2] + " z"); ok {
		t.Errorf("a %d-word chunk matched a text that differs in its last word", maxPhrase+1)
	}
}

// TestSearchSeveralWords: a search of several words ends when the rarest
// word's postings do, and a word without postings ends it at once.
func TestSearchSeveralWords(t *testing.T) {
	m := &memIndex{}
	for id := range 3000 {
		extra := ""
		if id%500 == 0 {
			extra = " okapi"
		}
		m.add(LayerSource, int64(id+1), "notes", fmt.Sprintf("common word%d filler%s", id%97, extra))
	}
	got, err := Search(context.Background(), "common okapi", 10, m.under(""))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("Search(common okapi) = %d hits, want the 6 sources with both", len(got))
	}
	// One round per layer: in the trusted layer no postings at all; in
	// the sources a batch of common and okapi's 6 postings, fewer than a
	// batch, so every match has been met.
	if m.reads != 2 || m.fetched > 6+firstBatch {
		t.Errorf("Search(common okapi) read %d rounds and %d documents, want 2 and at most %d", m.reads, m.fetched, 6+firstBatch)
	}
	m.reads, m.fetched = 0, 0
	if got, err := Search(context.Background(), "common zzz", 10, m.under("")); err != nil || len(got) != 0 || m.reads != 2 || m.fetched != 0 {
		t.Errorf("Search(common zzz) = %d hits, %v, %d rounds, %d documents; want none after 2 rounds and no document",
			len(got), err, m.reads, m.fetched)
	}
}

// TestSearchChecksPartlyMet builds the case the bounds of the second
// phase exist for: after one round the k-th best (z, met in both words'
// postings) beats every unmet document, but x, met only in bbb's
// postings, beats z with an impact for aa that its postings have not
// reached yet.
func TestSearchChecksPartlyMet(t *testing.T) {
	m := &memIndex{}
	id := int64(0)
	add := func(content string) int64 {
		id++
		m.add(LayerSource, id, "p", content)
		return id
	}
	filler := func(n int) string { return strings.Repeat(" qq", n) }
	z := add("bbb aa")                          // 1.669 + 1.669
	x := add(strings.Repeat("bbb ", 30) + "aa") // 2.158 + 1.393
	for range 20 {
		add("bbb" + filler(49)) // 1.257 for bbb
	}
	for range 17 {
		add("aa" + filler(17)) // 1.505 for aa: above x's
	}
	got, err := Search(context.Background(), "bbb aa", 1, m.under(""))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].SourceID != x {
		t.Fatalf("Search(bbb aa, 1) = %+v, want source %d (z is %d)", got, x, z)
	}
	if diff := cmp.Diff(m.brute("bbb aa", 1, ""), got); diff != "" {
		t.Errorf("(-brute +search):\n%s", diff)
	}
}

// TestIndexLongWordAllocatesLittle: a word of many megabytes (a client's
// maximal memory_update) is indexed by its cut term, without copying the
// word itself.
func TestIndexLongWordAllocatesLittle(t *testing.T) {
	for _, w := range []string{strings.Repeat("a", 4<<20), strings.Repeat("A", 4<<20)} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := Index(w)
		runtime.ReadMemStats(&after)
		if want := []Posting{{Term: strings.ToLower(w[:MaxTermBytes]), Rank: -impact(1, 1)}}; !slices.Equal(got, want) {
			t.Fatalf("Index(%q...) = %v, want %v", w[:8], got, want)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
			t.Errorf("Index(a %d-byte word %q...) allocated %d bytes, want at most 64 KiB", len(w), w[:8], n)
		}
	}
}
