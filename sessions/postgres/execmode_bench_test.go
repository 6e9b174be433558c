package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"

	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
)

// BenchmarkExecMode measures what each pgx query execution mode costs on a
// direct connection (no pooler), as the URL's default_query_exec_mode
// selects it: cache_statement (named prepared statements, pgx's own
// default), cache_describe (the store's default, see
// postgres.DefaultQueryExecMode), describe_exec and exec. For each mode it
// opens a store of its own on a schema of its own, seeded with 1,000
// sessions of 20 messages each, and times as sub-benchmarks
// mode=<name>/<op> two reads and a write: GetSession of one session (get),
// ListSessions(100) (list100), and AppendMessages of one user and one
// assistant message with a head move on a fresh session, as in
// BenchmarkAppendTurn (append). One call of each op runs before the
// timing, so the pool's connection and the mode's statement cache are
// warm: what differs is the round trips, the server-side parsing and
// planning, and the result format (text when the mode does not know the
// result types) that each mode implies.
func BenchmarkExecMode(b *testing.B) {
	const n, perSession = 1000, 20
	seed := func(ctx context.Context, _ *postgres.Store, db *testDB) error {
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		err := copyRows(ctx, db, "sessions",
			[]string{"id", "agent_id", "title", "source", "created_at", "updated_at", "archived"}, n,
			func(i int) []any {
				up := base.Add(time.Duration((i*7919)%n) * time.Second)
				return []any{fmt.Sprintf("mcp_%032x", i), "main", fmt.Sprintf("session %d", i), "mcp",
					base.Add(time.Duration(i) * time.Second), up, i%10 == 0}
			})
		if err != nil {
			return err
		}
		// Messages too, so the statistics of the VACUUM ANALYZE that
		// follows are not those of an empty table: with those, the foreign
		// key checks of the first mode's appends keep a sequential-scan
		// plan on its connection and slow down as its chain grows, which
		// would charge the first mode with the order of the runs.
		id := func(i int) string { return fmt.Sprintf("msg_%032x", i) }
		return copyRows(ctx, db, "messages", []string{"id", "session_id", "parent_id", "role", "content", "created_at"},
			n*perSession, func(i int) []any {
				parent := any(nil)
				if i%perSession != 0 {
					parent = id(i - 1)
				}
				role := []string{sessions.RoleUser, sessions.RoleAssistant}[i%2]
				return []any{id(i), fmt.Sprintf("mcp_%032x", i/perSession), parent, role,
					fmt.Sprintf("message %d with some ordinary text in it", i), base}
			})
	}
	ctx := context.Background()
	meta := []byte(`{"speaker_kind":"client","speaker_id":"mcp/abc","authority_tier":"paired"}`)
	reply := strings.Repeat("You have three meetings. ", 20)
	for _, mode := range []string{"cache_statement", "cache_describe", "describe_exec", "exec"} {
		b.Run("mode="+mode, func(b *testing.B) {
			// A schema of its own per mode: the appends of one mode leave
			// dead index entries at the head of sessions_list_idx (their
			// session is the most recently updated) and a longer messages
			// table, which must not be charged to the modes after it.
			_, db := seeded(b, "execmode_"+mode, seed)
			st, err := postgres.Open(ctx, pgtest.WithParams(db.URL, map[string]string{"default_query_exec_mode": mode}))
			if err != nil {
				b.Fatalf("open the store with default_query_exec_mode=%s: %v", mode, err)
			}
			b.Cleanup(func() { st.Close() })
			// A fresh session for the appends.
			sid := "exec_" + mode + "_" + randomSuffix()
			if _, err := st.CreateSession(ctx, sessions.Session{ID: sid}); err != nil {
				b.Fatal(err)
			}
			getID := fmt.Sprintf("mcp_%032x", 1)
			ops := []struct {
				name string
				fn   func() error
			}{
				{"get", func() error {
					got, err := st.GetSession(ctx, getID)
					if err == nil && got.ID != getID {
						err = fmt.Errorf("GetSession(%q) = session %q", getID, got.ID)
					}
					return err
				}},
				{"list100", func() error {
					got, err := st.ListSessions(ctx, 100)
					if err == nil && len(got) != 100 {
						err = fmt.Errorf("ListSessions(100) = %d sessions", len(got))
					}
					return err
				}},
				{"append", func() func() error {
					head := ""
					return func() error {
						got, err := st.AppendMessages(ctx, sid, head, []sessions.NewMessage{
							{Role: sessions.RoleUser, Content: "what is on my calendar today?", Metadata: meta},
							{Role: sessions.RoleAssistant, Content: reply},
						}, true)
						if err == nil {
							head = got[1].ID
						}
						return err
					}
				}()},
			}
			for _, op := range ops {
				b.Run(op.name, func(b *testing.B) {
					// Warm up: a pool connection (closed after 1 s idle)
					// and the mode's statement cache.
					if err := op.fn(); err != nil {
						b.Fatalf("%s (warm-up): %v", op.name, err)
					}
					timed(b, op.fn)
				})
			}
		})
	}
}
