package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"

	"github.com/openprogram/openprogram/sessions/postgres/pgtest"
	"github.com/openprogram/openprogram/sessions/storetest"
)

// Benchmarks seed their data once per test binary, in schemas of their
// own that TestMain drops at the end, so -count runs measure the same data
// without seeding it again. Every benchmark also reports the median
// latency of one call as p50-ms.

var benchSeeds struct {
	sync.Mutex
	dbs     map[string]*testDB
	stores  map[string]*postgres.Store
	cleanup []func()
}

// seeded returns the store for name, creating its schema and running seed
// the first time.
func seeded(b *testing.B, name string, seed func(ctx context.Context, st *postgres.Store, db *testDB) error) (*postgres.Store, *testDB) {
	b.Helper()
	benchSeeds.Lock()
	defer benchSeeds.Unlock()
	if st, ok := benchSeeds.stores[name]; ok {
		return st, benchSeeds.dbs[name]
	}
	base := baseURL(b)
	suffix := randomSuffix()
	db := &testDB{Schema: "op_bench_" + suffix, AppName: "op_bench_" + suffix, base: base}
	db.URL = pgtest.WithParams(base, map[string]string{"search_path": db.Schema, "application_name": db.AppName})
	db.exec(b, "CREATE SCHEMA "+db.Schema)
	benchSeeds.cleanup = append(benchSeeds.cleanup, func() { db.exec(b, "DROP SCHEMA "+db.Schema+" CASCADE") })
	ctx := context.Background()
	st, err := postgres.Open(ctx, db.URL)
	if err != nil {
		b.Fatal(err)
	}
	benchSeeds.cleanup = append(benchSeeds.cleanup, func() { st.Close() })
	start := time.Now()
	if err := seed(ctx, st, db); err != nil {
		b.Fatalf("seed %s: %v", name, err)
	}
	db.exec(b, "VACUUM ANALYZE sessions, messages, memory_sources, memory_terms")
	// Write the loaded pages out now rather than while a benchmark runs
	// (needs superuser or pg_checkpoint; skipped without).
	if c, err := pgx.Connect(ctx, db.URL); err == nil {
		_, _ = c.Exec(ctx, "CHECKPOINT")
		c.Close(ctx)
	}
	b.Logf("seeded %s in %v", name, time.Since(start).Round(time.Millisecond))
	if benchSeeds.stores == nil {
		benchSeeds.stores, benchSeeds.dbs = map[string]*postgres.Store{}, map[string]*testDB{}
	}
	benchSeeds.stores[name], benchSeeds.dbs[name] = st, db
	return st, db
}

// dropBenchSchemas closes the benchmark stores and drops their schemas.
func dropBenchSchemas() {
	benchSeeds.Lock()
	defer benchSeeds.Unlock()
	for i := len(benchSeeds.cleanup) - 1; i >= 0; i-- {
		benchSeeds.cleanup[i]()
	}
	benchSeeds.cleanup, benchSeeds.stores, benchSeeds.dbs = nil, nil, nil
}

// copyRows bulk-loads rows into table with COPY on a connection of its
// own. The table's plain indexes (those not backing a constraint) are
// dropped first and rebuilt from their definitions afterwards: one sorted
// build is much faster than a million index insertions.
func copyRows(ctx context.Context, db *testDB, table string, cols []string, n int, row func(i int) []any) error {
	c, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT i.indexname, i.indexdef FROM pg_indexes i
		WHERE i.schemaname = current_schema() AND i.tablename = $1
		AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = (quote_ident(i.indexname))::regclass)`, table)
	if err != nil {
		return err
	}
	type index struct{ Name, Def string }
	indexes, err := pgx.CollectRows(rows, pgx.RowToStructByPos[index])
	if err != nil {
		return err
	}
	for _, ix := range indexes {
		if _, err := c.Exec(ctx, "DROP INDEX "+pgx.Identifier{ix.Name}.Sanitize()); err != nil {
			return err
		}
	}
	i := 0
	_, err = c.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromFunc(func() ([]any, error) {
		if i == n {
			return nil, nil
		}
		i++
		return row(i - 1), nil
	}))
	if err != nil {
		return err
	}
	for _, ix := range indexes {
		if _, err := c.Exec(ctx, ix.Def); err != nil {
			return err
		}
	}
	return nil
}

// latencies times each iteration of b.Loop and reports the median.
type latencies []time.Duration

func (l *latencies) report(b *testing.B) {
	b.Helper()
	if len(*l) == 0 {
		return
	}
	slices.Sort(*l)
	b.ReportMetric(float64((*l)[len(*l)/2].Microseconds())/1000, "p50-ms")
}

func timed(b *testing.B, fn func() error) {
	b.Helper()
	var lat latencies
	for b.Loop() {
		start := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	lat.report(b)
}

// BenchmarkList100 lists the first page of a thousand and of a million
// sessions; one in ten is archived. The partial index makes both the same.
func BenchmarkList100(b *testing.B) {
	sizes := []int{1000, 1000000}
	stores := map[int]*postgres.Store{}
	// Seed both sizes before timing either, so both run on a settled server.
	for _, n := range sizes {
		stores[n], _ = seeded(b, fmt.Sprintf("list%d", n), func(ctx context.Context, _ *postgres.Store, db *testDB) error {
			base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			return copyRows(ctx, db, "sessions",
				[]string{"id", "agent_id", "title", "source", "created_at", "updated_at", "archived"}, n,
				func(i int) []any {
					// updated_at is a permutation of creation order.
					up := base.Add(time.Duration((i*7919)%n) * time.Second)
					return []any{fmt.Sprintf("mcp_%032x", i), "main", fmt.Sprintf("session %d", i), "mcp",
						base.Add(time.Duration(i) * time.Second), up, i%10 == 0}
				})
		})
	}
	ctx := context.Background()
	for _, n := range sizes {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			timed(b, func() error {
				got, err := stores[n].ListSessions(ctx, 100)
				if err == nil && len(got) != 100 {
					err = fmt.Errorf("ListSessions(100) = %d sessions", len(got))
				}
				return err
			})
		})
	}
}

// BenchmarkBranch10000 reads a 10,000-message active branch out of a
// messages table of 100,000 rows.
func BenchmarkBranch10000(b *testing.B) {
	const depth, noise, noiseSessions = 10000, 90000, 900
	st, _ := seeded(b, "branch", func(ctx context.Context, st *postgres.Store, db *testDB) error {
		now := time.Now()
		err := copyRows(ctx, db, "sessions", []string{"id", "agent_id", "title", "source", "created_at", "updated_at"},
			noiseSessions+1, func(i int) []any { return []any{fmt.Sprintf("s%04d", i), "main", "t", "mcp", now, now} })
		if err != nil {
			return err
		}
		id := func(i int) string { return fmt.Sprintf("msg_%032x", i) }
		err = copyRows(ctx, db, "messages", []string{"id", "session_id", "parent_id", "role", "content", "created_at"},
			depth+noise, func(i int) []any {
				sess, parent := "s0000", any(nil)
				if i >= depth {
					// Noise: 100-message chains in other sessions.
					sess = fmt.Sprintf("s%04d", 1+(i-depth)/100)
				}
				if i > 0 && (i < depth || (i-depth)%100 != 0) {
					parent = id(i - 1)
				}
				role := []string{sessions.RoleUser, sessions.RoleAssistant}[i%2]
				return []any{id(i), sess, parent, role, fmt.Sprintf("message %d with some ordinary text in it", i), now}
			})
		if err != nil {
			return err
		}
		return st.SetHead(ctx, "s0000", id(depth-1))
	})
	ctx := context.Background()
	timed(b, func() error {
		got, err := st.Branch(ctx, "s0000")
		if err == nil && len(got) != depth {
			err = fmt.Errorf("Branch = %d messages, want %d", len(got), depth)
		}
		return err
	})
}

// BenchmarkAppendTurn appends one turn (a user and an assistant message,
// head move and updated_at) in its transaction.
func BenchmarkAppendTurn(b *testing.B) {
	st, _ := seeded(b, "append", func(ctx context.Context, st *postgres.Store, _ *testDB) error {
		_, err := st.CreateSession(ctx, sessions.Session{ID: "s"})
		return err
	})
	ctx := context.Background()
	sess, err := st.GetSession(ctx, "s")
	if err != nil {
		b.Fatal(err)
	}
	head := sess.HeadID
	meta := []byte(`{"speaker_kind":"client","speaker_id":"mcp/abc","authority_tier":"paired"}`)
	timed(b, func() error {
		got, err := st.AppendMessages(ctx, "s", head, []sessions.NewMessage{
			{Role: sessions.RoleUser, Content: "what is on my calendar today?", Metadata: meta},
			{Role: sessions.RoleAssistant, Content: strings.Repeat("You have three meetings. ", 20)},
		}, true)
		if err == nil {
			head = got[1].ID
		}
		return err
	})
}

// BenchmarkSearch100k searches 100,000 sources of 30 to 80 words drawn
// from a 20,000-word Zipf vocabulary (like natural text): a rare word, a
// common word, a word in every source, two words together (a common and
// a rarer one; two common ones), and a word
// under a path prefix that holds 2% of the sources; "matches" is how many
// sources the query matches (under the prefix: anywhere).
func BenchmarkSearch100k(b *testing.B) {
	st := searchStore(b)
	word := searchWord
	ctx := context.Background()
	for _, q := range []struct{ name, query, prefix string }{
		{"rare", word(3000), ""},
		{"common", word(40), ""},
		{"every_source", word(0), ""},
		{"two_words", word(40) + " " + word(200), ""},
		{"two_common_words", word(20) + " " + word(30), ""},
		{"prefix", word(40), "notes/01"},
	} {
		b.Run(q.name, func(b *testing.B) {
			var matches int
			_, db := seeded(b, "search", nil)
			if err := db.conn(b).QueryRow(ctx, `SELECT count(*) FROM (SELECT id FROM memory_terms
				WHERE layer = 1 AND term = ANY($1) GROUP BY id HAVING count(*) = cardinality($1)) m`,
				strings.Fields(q.query)).Scan(&matches); err != nil {
				b.Fatal(err)
			}
			timed(b, func() error {
				got, err := st.SearchMemory(ctx, q.query, 10, q.prefix)
				if err == nil && len(got) == 0 {
					err = fmt.Errorf("SearchMemory(%q) found nothing", q.query)
				}
				return err
			})
			b.ReportMetric(float64(matches), "matches")
		})
	}
}

// BenchmarkGrep100k greps the sources of BenchmarkSearch100k for 20 lines
// with a common word and for a word that occurs nowhere (a full scan).
func BenchmarkGrep100k(b *testing.B) {
	st := searchStore(b)
	ctx := context.Background()
	for _, q := range []struct {
		name, sub string
		want      int
	}{
		{"common_limit20", searchWord(40), 20},
		{"absent", "zzzz", 0},
	} {
		b.Run(q.name, func(b *testing.B) {
			timed(b, func() error {
				got, err := st.GrepMemory(ctx, q.sub, "", false, 20)
				if err == nil && len(got) != q.want {
					err = fmt.Errorf("GrepMemory(%q) = %d hits, want %d", q.sub, len(got), q.want)
				}
				return err
			})
		})
	}
}

// searchWord is the word of the given Zipf rank in the search corpus:
// base-20 digits spelled as syllables, pronounceable and distinct.
func searchWord(rank int) string {
	syl := []string{"ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "we", "za", "bo", "de", "fi", "gu", "ha", "ji", "ko", "lu", "ma"}
	var sb strings.Builder
	for {
		sb.WriteString(syl[rank%20])
		rank /= 20
		if rank == 0 {
			return sb.String()
		}
	}
}

// searchStore seeds 100,000 sources of 30 to 80 words drawn from a
// 20,000-word Zipf vocabulary (s = 1.1, like natural text).
func searchStore(b *testing.B) *postgres.Store {
	const docs, vocab = 100000, 20000
	st, db := seeded(b, "search", func(ctx context.Context, st *postgres.Store, db *testDB) error {
		r := rand.New(rand.NewPCG(1, 2))
		z := rand.NewZipf(r, 1.1, 1, vocab-1)
		now := time.Now()
		err := copyRows(ctx, db, "memory_sources", []string{"path", "content", "speaker_kind", "speaker_id",
			"speaker_display", "principal_id", "authority_tier", "interaction", "source", "revision", "created_at"},
			docs, func(i int) []any {
				n := 30 + r.IntN(51)
				ws := make([]string, n)
				for j := range ws {
					ws[j] = searchWord(int(z.Uint64()))
				}
				return []any{fmt.Sprintf("notes/%03d/%06d.md", i%500, i), strings.Join(ws, " "), "client", "mcp/abc",
					"MCP client", "principal-1", "paired", "non-interactive", "mcp", int64(i + 1), now}
			})
		if err != nil {
			return err
		}
		// The index build of migration 3, timed on its own.
		start := time.Now()
		if err := st.ReindexMemory(ctx); err != nil {
			return err
		}
		b.Logf("indexed %d sources in %v", docs, time.Since(start).Round(time.Millisecond))
		return nil
	})
	var sources, terms, termsIndex string
	if err := db.conn(b).QueryRow(context.Background(), `SELECT pg_size_pretty(pg_total_relation_size('memory_sources')),
		pg_size_pretty(pg_table_size('memory_terms')), pg_size_pretty(pg_indexes_size('memory_terms'))`).
		Scan(&sources, &terms, &termsIndex); err != nil {
		b.Fatal(err)
	}
	b.Logf("memory_sources %s; memory_terms %s and its index %s", sources, terms, termsIndex)
	return st
}

// BenchmarkTasks: storetest.BenchTasks on a fresh schema.
func BenchmarkTasks(b *testing.B) {
	st := openStore(b, newTestDB(b))
	storetest.BenchTasks(b, st)
}
