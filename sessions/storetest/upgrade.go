package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

// UpgradeSources are the memory rows a backend's upgrade test writes with
// an older schema, path and content of each source in id order (ids from
// 1, revisions 1 to 3), with source 1 promoted to the trusted page at its
// path (revision 4), before [CheckUpgradedMemory] compares the upgraded
// store with one written now.
var UpgradeSources = [][2]string{
	{"notes/a", "zebra stripes zebra herd zebra"},
	{"notes/b", strings.Repeat("filler words ", 30) + "a zebra"},
	{"notes/a", "walrus tusk and one zebra"},
}

// CheckUpgradedMemory checks that upgraded, a store holding
// UpgradeSources as an older schema wrote them, searches exactly as a
// store written now: it appends UpgradeSources to fresh (an empty store),
// promotes source 1 and compares the hits of a few searches, then checks
// that an append to upgraded is found.
func CheckUpgradedMemory(t *testing.T, upgraded, fresh sessions.Store) {
	t.Helper()
	ctx := context.Background()
	for _, d := range UpgradeSources {
		if _, err := fresh.AppendSource(ctx, sessions.NewSource{Path: d[0], Content: d[1], Authority: owner}, -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fresh.Promote(ctx, 1, -1); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"zebra", "walrus zebra", "filler"} {
		want, err := fresh.SearchMemory(ctx, q, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := upgraded.SearchMemory(ctx, q, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			t.Fatalf("SearchMemory(%q) on the fresh store found nothing", q)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("SearchMemory(%q) after the upgrade (-written now +upgraded):\n%s", q, diff)
		}
	}
	src, err := upgraded.AppendSource(ctx, sessions.NewSource{Path: "notes/c", Content: "okapi", Authority: owner}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := upgraded.SearchMemory(ctx, "okapi", 10, ""); err != nil || len(got) != 1 || got[0].SourceID != src.ID {
		t.Errorf("SearchMemory(okapi) after an append to the upgraded store = %+v, %v; want source %d", got, err, src.ID)
	}
}

// CheckReindexedMemory checks a backend's ReindexMemory: st holds one
// appended source with "zebra"; insertAround writes a second source with
// "zebra" around the store (plain SQL, no postings), which search must
// not find until reindex has run, and reindexing again must change
// nothing.
func CheckReindexedMemory(t *testing.T, st sessions.Store, insertAround func(path, content string), reindex func(context.Context) error) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.AppendSource(ctx, sessions.NewSource{Path: "notes/x", Content: "zebra crossing", Authority: owner}, -1); err != nil {
		t.Fatal(err)
	}
	insertAround("notes/y", "a zebra herd")
	before, err := st.SearchMemory(ctx, "zebra", 10, "")
	if err != nil || len(before) != 1 {
		t.Fatalf("SearchMemory before the reindex = %+v, %v; want only the appended source", before, err)
	}
	for range 2 {
		if err := reindex(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := st.SearchMemory(ctx, "zebra", 10, "")
		if err != nil || len(got) != 2 {
			t.Errorf("SearchMemory after ReindexMemory = %+v, %v; want both sources once", got, err)
		}
	}
}
