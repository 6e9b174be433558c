package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/sessions"
)

// FuzzSearchQuery: no user query is ever syntax, so none can fail.
func FuzzSearchQuery(f *testing.F) {
	for _, q := range []string{
		`"`, `NEAR(`, `alpha AND`, `OR`, `*`, `-alpha`, `^alpha`, `col:alpha`, `{alpha}`, `'; DROP TABLE x; --`,
		`c++`, `e-mail`, `alpha <-> beta`, "\x00", `ü`, `🙂`, `a"b"c`, `(((`, `alpha*beta`,
	} {
		f.Add(q)
	}
	st, err := Open(context.Background(), filepath.Join(f.TempDir(), DefaultFileName))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.Close() })
	if _, err := st.AppendSource(context.Background(), sessions.NewSource{Path: "p", Content: "alpha beta e-mail c++"}, -1); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := st.SearchMemory(context.Background(), q, 5, ""); err != nil {
			t.Errorf("SearchMemory(%q) error: %v", q, err)
		}
		if _, err := st.SearchMemory(context.Background(), q, 5, q); err != nil {
			t.Errorf("SearchMemory(%q, prefix %q) error: %v", q, q, err)
		}
	})
}
