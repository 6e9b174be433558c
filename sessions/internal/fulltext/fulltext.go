// Package fulltext is memory search, the same for every backend: one
// tokenizer, one score, and one top-k algorithm over an impact-ordered
// index that each backend stores in a table of its own.
//
// # The index
//
// A document (a source or a trusted page) is split into words: runs of
// letters, digits, marks and private-use characters, folded ([fold]:
// lower case, and Latin letters without their accents). For every
// distinct word the index holds one posting
// (term, rank, id): the word cut to [MaxTermBytes] as the term, and the
// rank, the negated impact of the word on the document. The backends keep
// the postings of each layer in a b-tree on (term, rank, id), so reading a
// term's postings in key order reads them best first.
//
// # The score
//
// The impact of a word is BM25's term-frequency part (k1 = 1.2, b = 0.75)
// against a fixed reference length of [refLength] words, in integers, so
// that it depends on the document alone: a search can then read the best
// postings without scoring the other matches, and every backend computes
// the same numbers. There is no inverse document frequency: every query
// word must occur in every hit, and leaving it out keeps a posting's
// impact fixed when other documents arrive. A document's score for a
// query is the sum of the impacts of the query's distinct words.
//
// # The search
//
// [Search] runs, for each layer, a top-k search over the postings of the
// query's terms in the manner of Fagin, Lotem and Naor's threshold
// algorithms: it reads each term's postings (the index alone, no text) in
// batches, best first; checks a document's text once it has met the
// document in every term's postings, which makes phrases, cut terms and
// the path prefix exact; and stops as soon as no document can still beat
// the k-th best, bounding each by what was read and where each term's
// postings stand. A term whose postings end ends the search for documents
// not met yet, since every match holds every term. A word most documents
// contain costs one batch instead of a score for each of its matches.
package fulltext

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/openprogram/openprogram/sessions"
)

const (
	// MaxTermBytes bounds an index term: longer words are cut on a rune
	// boundary, and the verification against the text tells apart the
	// words that share the cut.
	MaxTermBytes = 64

	// Scale is the impact of a word that occurs once in a document of the
	// reference length; a hit's Score is its integer score over Scale.
	Scale = 10_000

	// MaxQueryGroups bounds the whitespace-separated chunks of one query.
	MaxQueryGroups = 32

	// refLength is the reference document length, in words, of the length
	// normalisation: shorter documents weigh a word more, longer ones less.
	refLength = 100

	// maxImpact bounds every impact: BM25's saturation (k1 + 1) times Scale.
	maxImpact = Scale * 22 / 10

	// maxLists is how many of a query's terms have their postings read; a
	// term beyond them only counts as maxImpact in the threshold.
	maxLists = 8

	// firstBatch and maxBatch bound the postings read per term and round:
	// a round reads twice the previous one's.
	firstBatch = 16
	maxBatch   = 1024
)

// Layers are the stored layer numbers, in the order [Search] merges
// equal scores: trusted pages before sources.
const (
	LayerTrusted = 0
	LayerSource  = 1
)

// DocTable returns the table that holds a layer's documents and the
// column their postings' ids name, the same in every backend's schema.
func DocTable(layer int) (table, idColumn string) {
	if layer == LayerTrusted {
		return "memory_trusted", "source_id"
	}
	return "memory_sources", "id"
}

// isWord reports whether r belongs to a word.
func isWord(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.Is(unicode.Co, r)
}

// asciiWord marks the ASCII bytes that belong to a word.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = isWord(rune(c))
	}
	return t
}()

// eachWord calls fn with every word of s, folded ([fold]) and, with cut,
// cut to its index term ([term]), and the byte offset where it starts, in
// order, until fn returns false. The slice is reused: fn must copy what it
// keeps. ASCII words are folded in place without allocating; cut, an ASCII
// word of any length is copied no further than its term.
func eachWord(s string, cut bool, fn func(w []byte, start int) bool) {
	var buf [2 * MaxTermBytes]byte
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if !asciiWord[c] {
				i++
				continue
			}
		} else if r, size := utf8.DecodeRuneInString(s[i:]); !isWord(r) {
			i += size
			continue
		}
		start, ascii, upper := i, true, false
		for i < len(s) {
			if c := s[i]; c < utf8.RuneSelf {
				if !asciiWord[c] {
					break
				}
				upper = upper || 'A' <= c && c <= 'Z'
				i++
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			if !isWord(r) {
				break
			}
			ascii = false
			i += size
		}
		w := s[start:i]
		if !ascii {
			w = fold(w)
		}
		if cut {
			// Folding an ASCII word keeps its length, so cutting it first
			// gives the term of the folded word.
			w = term(w)
		}
		b := append(buf[:0], w...)
		if ascii && upper {
			for j, c := range b {
				if 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
		}
		if !fn(b, start) {
			return
		}
	}
}

// fold is how a word is compared: strings.ToLower, then, in canonical
// decomposition (NFD), the nonspacing marks on Latin letters removed, and
// the rest recomposed (NFC). So "Café" and "cafe" are one word, as are
// "İstanbul" and "istanbul"; marks on other scripts stay (Japanese "が" is
// not "か"). A word that is all ASCII is only lower-cased.
func fold(w string) string {
	w = strings.ToLower(w)
	d := norm.NFD.String(w)
	latin := false
	stripped := strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			if latin {
				return -1
			}
			return r
		}
		latin = unicode.Is(unicode.Latin, r)
		return r
	}, d)
	return norm.NFC.String(stripped)
}

// term returns the index term of a folded word: the word cut to
// MaxTermBytes on a rune boundary.
func term(w string) string {
	if len(w) <= MaxTermBytes {
		return w
	}
	cut := MaxTermBytes
	for cut > 0 && w[cut]&0xc0 == 0x80 {
		cut--
	}
	return w[:cut]
}

// impact is the integer BM25 term-frequency weight of a word occurring tf
// times in a document of length words:
//
//	Scale * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / refLength))
//
// with k1 = 6/5 and b = 3/4, multiplied out so that it is exact; at least 1.
func impact(tf, length int) int32 {
	num := int64(Scale) * 22 * refLength * int64(tf)
	den := 10*refLength*int64(tf) + 3*refLength + 9*int64(length)
	return int32(max(1, num/den))
}

// Posting is one entry of a document's index: a term and its rank, the
// negated impact, so that ascending (term, rank, id) order is best first.
type Posting struct {
	Term string
	Rank int32
}

// Index returns the postings of a document's text, one per distinct term,
// in term order.
func Index(content string) []Posting {
	tf := map[string]int{}
	length := 0
	eachWord(content, true, func(w []byte, _ int) bool {
		length++
		tf[string(w)]++
		return true
	})
	out := make([]Posting, 0, len(tf))
	for t, n := range tf {
		out = append(out, Posting{Term: t, Rank: -impact(n, length)})
	}
	slices.SortFunc(out, func(a, b Posting) int { return strings.Compare(a.Term, b.Term) })
	return out
}

// maxPhrase is the longest chunk, in words, that Score matches with one
// machine word per chunk (shift-and); longer ones are cut to it in
// matching, and the cut is checked again on the full chunk.
const maxPhrase = 64

// Query is a parsed search: the query's chunks as folded phrases, and its
// distinct terms and words.
type Query struct {
	raw    [][]string // the chunks as typed, for excerpts
	groups [][]string // the chunks, folded
	terms  []string   // distinct terms, longest first
	words  map[string]int
	// For each distinct folded word: its term (index into terms) and, per
	// chunk, the bit mask of the chunk's positions that hold it.
	wordTerm []int
	masks    [][]uint64
}

// Parse splits a user's query into plain words ([Words]): each
// whitespace-separated chunk must occur as a phrase, and every chunk must
// occur. Nothing a user types is syntax.
func Parse(query string) Query {
	q := Query{raw: Words(query, MaxQueryGroups), words: map[string]int{}}
	var folded []string
	for _, g := range q.raw {
		fg := make([]string, len(g))
		for i, w := range g {
			fg[i] = fold(w)
			if _, ok := q.words[fg[i]]; !ok {
				q.words[fg[i]] = len(folded)
				folded = append(folded, fg[i])
			}
			if t := term(fg[i]); !slices.Contains(q.terms, t) {
				q.terms = append(q.terms, t)
			}
		}
		q.groups = append(q.groups, fg)
	}
	// Longer words tend to be rarer; a rare term's postings end soonest.
	slices.SortStableFunc(q.terms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	q.wordTerm = make([]int, len(folded))
	q.masks = make([][]uint64, len(folded))
	for i, w := range folded {
		q.wordTerm[i] = slices.Index(q.terms, term(w))
		q.masks[i] = make([]uint64, len(q.groups))
		for g, words := range q.groups {
			for j, gw := range words[:min(len(words), maxPhrase)] {
				if gw == w {
					q.masks[i][g] |= 1 << j
				}
			}
		}
	}
	return q
}

// Empty reports whether the query has no words.
func (q Query) Empty() bool { return len(q.groups) == 0 }

// Score verifies that content matches q (every chunk occurs as a phrase)
// and returns its score: the sum, over the query's terms, of the impact of
// the occurrences of the query's words of that term. It reads content
// once, matching every chunk at each word with shift-and.
func (q Query) Score(content string) (int64, bool) {
	state := make([]uint64, len(q.groups))
	found := make([]bool, len(q.groups))
	tf := make([]int, len(q.terms))
	length := 0
	eachWord(content, false, func(w []byte, _ int) bool {
		length++
		i, ok := q.words[string(w)]
		for g := range state {
			if !ok {
				state[g] = 0
				continue
			}
			state[g] = (state[g]<<1 | 1) & q.masks[i][g]
			if state[g]&(1<<(min(len(q.groups[g]), maxPhrase)-1)) != 0 {
				found[g] = true
			}
		}
		if ok {
			tf[q.wordTerm[i]]++
		}
		return true
	})
	for g, ok := range found {
		if !ok || len(q.groups[g]) > maxPhrase && !hasPhrase(words(content), q.groups[g]) {
			return 0, false
		}
	}
	var score int64
	for _, n := range tf {
		score += int64(impact(n, length))
	}
	return score, true
}

// words returns the words of s, folded, in order.
func words(s string) []string {
	var out []string
	eachWord(s, false, func(w []byte, _ int) bool {
		out = append(out, string(w))
		return true
	})
	return out
}

// hasPhrase reports whether ws holds phrase as consecutive words.
func hasPhrase(ws, phrase []string) bool {
	for i := 0; i+len(phrase) <= len(ws); i++ {
		if slices.Equal(ws[i:i+len(phrase)], phrase) {
			return true
		}
	}
	return false
}

// Entry is one posting as a backend reads it: the document's rank for
// the term and its id (the source id; for a trusted page, the source it
// was promoted from).
type Entry struct {
	Rank int32
	ID   int64
}

// Document is a stored source or trusted page, by the id its postings
// carry.
type Document struct {
	ID      int64
	Path    string
	Content string
}

// Cursor is where a term's postings were last read: the next batch starts
// after (Rank, ID).
type Cursor = Entry

// Request asks for at most N postings of Term after the cursor After.
type Request struct {
	Term  string
	After Cursor
	N     int
}

// Reader is a backend's postings and documents, read within one snapshot
// for one search, both limited to the paths under the search's prefix.
type Reader interface {
	// Postings answers each request (in one round trip where the backend
	// has them): the postings of its term in one layer, in (rank, id)
	// order after its cursor, of documents under the prefix.
	Postings(ctx context.Context, layer int, reqs []Request) ([][]Entry, error)
	// Documents reads the documents of one layer with the given ids that
	// are under the prefix, in any order.
	Documents(ctx context.Context, layer int, ids []int64) ([]Document, error)
}

// start is before every posting: ranks are negated impacts of at least 1.
var start = Cursor{Rank: -maxImpact - 1}

type hit struct {
	id         int64
	score      int64
	path, text string
	layer      int
}

// before orders hits best first: higher score, then trusted pages, then
// the lower source id.
func before(a, b hit) int {
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	if c := cmp.Compare(a.layer, b.layer); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// seenDoc is what a search knows of a document it met in some postings:
// the sum of the impacts read so far, the lists (bits) they came from, and
// whether its text has been checked.
type seenDoc struct {
	known   int64
	lists   uint16
	checked bool
}

// topK is the state of one layer's search.
type topK struct {
	q       Query
	layer   int
	k       int
	r       Reader
	lists   []string // the terms whose postings are read
	cursors []Cursor
	unread  int64 // the bound of the terms not read: maxImpact each
	docs    map[int64]*seenDoc
	best    []hit // checked matches, best first, at most k
}

// directCheck is how many documents met in only some postings a search
// checks by their text at once; with more, it reads more postings first.
const directCheck = 32

// layerTopK returns the best k documents of one layer that match q.
//
// It reads postings alone (the index, no text), a batch per term and
// round, and checks a document's text once it has met the document in
// every term's postings. Unmet documents are out once a term's postings
// have ended (every match has that term, so all were met) or no unmet
// document can reach the k-th best ([done]). What remains are documents
// met in some postings only: while more than directCheck of them could
// still enter the top k (bound: what was read, plus each other term's
// cursor), it reads another round, which meets them elsewhere or lowers
// the bounds; the last few it checks by their text, best bound first.
func layerTopK(ctx context.Context, q Query, layer, k int, r Reader) ([]hit, error) {
	t := &topK{q: q, layer: layer, k: k, r: r, lists: q.terms[:min(len(q.terms), maxLists)], docs: map[int64]*seenDoc{}}
	t.unread = int64(len(q.terms)-len(t.lists)) * maxImpact
	t.cursors = make([]Cursor, len(t.lists))
	for i := range t.cursors {
		t.cursors[i] = start
	}
	all := uint16(1)<<len(t.lists) - 1
	var ended uint16 // the terms whose postings ended
	for n := firstBatch; ; n = min(2*n, maxBatch) {
		var reqs []Request
		var of []int // the list of each request
		for i, term := range t.lists {
			if ended&(1<<i) == 0 {
				reqs = append(reqs, Request{Term: term, After: t.cursors[i], N: n})
				of = append(of, i)
			}
		}
		answers, err := r.Postings(ctx, layer, reqs)
		if err != nil {
			return nil, fmt.Errorf("read the postings of %q: %w", t.lists, err)
		}
		for j, entries := range answers {
			i := of[j]
			for _, e := range entries {
				t.cursors[i] = e
				d := t.docs[e.ID]
				if d == nil {
					d = &seenDoc{}
					t.docs[e.ID] = d
				}
				d.known += int64(-e.Rank)
				d.lists |= 1 << i
			}
			if len(entries) < n {
				ended |= 1 << i
			}
		}
		var met []int64
		for id, d := range t.docs {
			if !d.checked && d.lists == all {
				met = append(met, id)
			}
		}
		slices.Sort(met)
		if err := t.check(ctx, met); err != nil {
			return nil, err
		}
		if ended == 0 && (len(t.best) < k || !done(t.best[k-1], t.cursors, t.unread)) {
			continue // an unmet document may still enter
		}
		for {
			rest := t.partlyMet(ended)
			if len(rest) == 0 {
				return t.best, nil
			}
			if len(rest) > directCheck && ended != all {
				break // read another round
			}
			if err := t.check(ctx, rest[:min(len(rest), maxBatch)]); err != nil {
				return nil, err
			}
		}
	}
}

// partlyMet returns the unchecked documents that could still enter the
// top k, best bound first: those met in every ended term's postings whose
// bound (the impacts read plus, for each term they were not met in, its
// cursor's impact, less one below the cursor's id) reaches the k-th best.
func (t *topK) partlyMet(ended uint16) []int64 {
	type pending struct {
		id    int64
		bound int64
	}
	var rest []pending
	for id, d := range t.docs {
		if d.checked || d.lists&ended != ended {
			continue
		}
		bound := d.known + t.unread
		for i, c := range t.cursors {
			if d.lists&(1<<i) == 0 {
				// Its impact there is at most the cursor's, and below
				// it if its id is not above the cursor's: with the
				// cursor's impact, it would have been read already.
				bound += int64(-c.Rank)
				if id <= c.ID {
					bound--
				}
			}
		}
		if len(t.best) == t.k {
			last := t.best[t.k-1]
			if last.score > bound || last.score == bound && last.id < id {
				continue
			}
		}
		rest = append(rest, pending{id, bound})
	}
	slices.SortFunc(rest, func(a, b pending) int {
		if c := cmp.Compare(b.bound, a.bound); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	ids := make([]int64, len(rest))
	for i, p := range rest {
		ids[i] = p.id
	}
	return ids
}

// check reads the documents ids, scores those that match, and keeps the
// best k.
func (t *topK) check(ctx context.Context, ids []int64) error {
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), maxBatch)]
		ids = ids[len(chunk):]
		docs, err := t.r.Documents(ctx, t.layer, chunk)
		if err != nil {
			return fmt.Errorf("read the documents met: %w", err)
		}
		for _, id := range chunk {
			t.docs[id].checked = true
		}
		for _, d := range docs {
			score, ok := t.q.Score(d.Content)
			if !ok {
				continue
			}
			h := hit{id: d.ID, score: score, path: d.Path, text: d.Content, layer: t.layer}
			if at, _ := slices.BinarySearchFunc(t.best, h, before); at < t.k {
				t.best = slices.Insert(t.best, at, h)
				t.best = t.best[:min(len(t.best), t.k)]
			}
		}
	}
	return nil
}

// done reports whether no unread document can come before last, the k-th
// best so far. An unread document sits after every cursor, so its score
// is at most the sum of the cursors' impacts (plus unread, the bound of
// the terms not read); it reaches that sum only with each cursor's impact,
// and then its id is above every cursor's id.
func done(last hit, cursors []Cursor, unread int64) bool {
	bound, maxID := unread, int64(0)
	for _, c := range cursors {
		bound += int64(-c.Rank)
		maxID = max(maxID, c.ID)
	}
	return last.score > bound || last.score == bound && last.id <= maxID
}

// Search returns the best topK hits for query over both layers, best
// first (higher score, then trusted pages, then the lower source id), each
// with an excerpt of its text.
func Search(ctx context.Context, query string, topK int, idx Reader) ([]sessions.MemoryHit, error) {
	q := Parse(query)
	if q.Empty() || topK <= 0 {
		return []sessions.MemoryHit{}, nil
	}
	trusted, err := layerTopK(ctx, q, LayerTrusted, topK, idx)
	if err != nil {
		return nil, err
	}
	sources, err := layerTopK(ctx, q, LayerSource, topK, idx)
	if err != nil {
		return nil, err
	}
	all := append(trusted, sources...)
	slices.SortFunc(all, before)
	all = all[:min(len(all), topK)]
	out := make([]sessions.MemoryHit, len(all))
	for i, h := range all {
		layer := sessions.LayerSource
		if h.layer == LayerTrusted {
			layer = sessions.LayerTrusted
		}
		out[i] = sessions.MemoryHit{Layer: layer, Path: h.path, SourceID: h.id,
			Score: float64(h.score) / Scale, Snippet: excerpt(h.text, q)}
	}
	return out, nil
}
