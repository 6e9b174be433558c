package mcpserver

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/sessions/sqlite"
)

// The cancel-versus-commit race over the real SQLite task store: its
// compare-and-set updates, not the test double's mutex, decide.
func TestTaskCancelCommitRaceSQLite(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "tasks.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	te := newTaskEnv(t, func(o *TaskOptions) { o.Start = func(context.Context, string, string) error { return nil } })
	raceCancelCommit(t, te, st, 300)
}
