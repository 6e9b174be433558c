package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

// Cases the conformance suite leaves to each backend: LIKE's escape
// character in a prefix, case folding beyond ASCII where the database's
// lower() is not trusted, and text PostgreSQL cannot hold.
func TestMemoryPostgresEdges(t *testing.T) {
	st := openStore(t, newTestDB(t))
	ctx := t.Context()
	for _, p := range []string{`win\dir\a.md`, `win\dirx.md`, `winXdir.md`} {
		if _, err := st.AppendSource(ctx, sessions.NewSource{Path: p, Content: "Größe ÉTÉ straße\nplain"}, -1); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := st.BrowseMemory(ctx, `win\dir\`)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range entries {
		paths = append(paths, e.Path)
	}
	if diff := cmp.Diff([]string{`win\dir\a.md`}, paths); diff != "" {
		t.Errorf(`BrowseMemory(win\dir\) treats \ literally (-want +got):\n%s`, diff)
	}

	hits, err := st.GrepMemory(ctx, "été", `win\dir\`, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Line != 1 || hits[0].Path != `win\dir\a.md` {
		t.Errorf("GrepMemory(été, case-insensitive) = %+v, want line 1 of win\\dir\\a.md", hits)
	}
	hits, err = st.GrepMemory(ctx, "GRÖSSE", "", false, 0)
	if err != nil || len(hits) != 0 {
		t.Errorf("GrepMemory(GRÖSSE) = %+v, %v; want no hit (lowercase folding, not full case folding)", hits, err)
	}
	hits, err = st.GrepMemory(ctx, "a\x00b", "", true, 0)
	if err != nil || len(hits) != 0 {
		t.Errorf("GrepMemory(with NUL) = %+v, %v; want no hit and no error", hits, err)
	}

	got, err := st.SearchMemory(ctx, "straße\x00", 10, `win\dir`)
	if err != nil {
		t.Fatal(err)
	}
	paths = nil
	for _, h := range got {
		paths = append(paths, h.Path)
	}
	if diff := cmp.Diff([]string{`win\dir\a.md`, `win\dirx.md`}, paths); diff != "" {
		t.Errorf(`SearchMemory(straße, prefix win\dir) (-want +got):\n%s`, diff)
	}
}

// PostgreSQL text holds neither NUL nor invalid UTF-8: the store says so
// instead of passing on a driver error, and writes nothing. NUL is refused
// with sessions.ErrInvalidText, as on every backend (storetest's Text
// group); invalid UTF-8 gets the PostgreSQL explanation.
func TestTextPostgresCannotHold(t *testing.T) {
	st := openStore(t, newTestDB(t))
	ctx := t.Context()
	if _, err := st.CreateSession(ctx, sessions.Session{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{"binary\x00file", "latin1 \xe9t\xe9"} {
		refused := func(err error) bool {
			if strings.ContainsRune(content, 0) {
				return errors.Is(err, sessions.ErrInvalidText)
			}
			return err != nil && strings.Contains(err.Error(), "PostgreSQL text")
		}
		_, err := st.AppendMessages(ctx, "s", "", []sessions.NewMessage{{Role: sessions.RoleTool, Content: content}}, true)
		if !refused(err) {
			t.Errorf("AppendMessages(content %q) error = %v, want it refused (ErrInvalidText for NUL, the PostgreSQL text explanation otherwise)", content, err)
		}
		_, err = st.AppendSource(ctx, sessions.NewSource{Path: "p", Content: content}, -1)
		if !refused(err) {
			t.Errorf("AppendSource(content %q) error = %v, want it refused (ErrInvalidText for NUL, the PostgreSQL text explanation otherwise)", content, err)
		}
	}
	if b, err := st.Branch(ctx, "s"); err != nil || len(b) != 0 {
		t.Errorf("Branch after refused appends = %d msgs, %v; want none", len(b), err)
	}
}
