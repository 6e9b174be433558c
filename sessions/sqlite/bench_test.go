package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/storetest"
)

// Seeded benchmark databases live for the whole test binary run, so
// -count=N seeds once; TestMain removes them.
var (
	benchMu     sync.Mutex
	benchDir    string
	benchStores = map[string]*Store{}
)

func cleanupBenchData() {
	benchMu.Lock()
	defer benchMu.Unlock()
	for _, s := range benchStores {
		s.Close()
	}
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
}

// benchStore returns the store named name, seeding it on first use.
func benchStore(b *testing.B, name string, seed func(ctx context.Context, s *Store) error) *Store {
	b.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	if s, ok := benchStores[name]; ok {
		return s
	}
	if benchDir == "" {
		d, err := os.MkdirTemp("", "openprogram-sqlite-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
	}
	s, err := OpenWith(context.Background(), filepath.Join(benchDir, name+".db"), &sessions.Options{AuditKey: storetest.Key})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	// A large page cache for the one writer connection: seeding builds
	// indexes in random order.
	// Seeding commits need no durability.
	for _, q := range []string{`PRAGMA cache_size = -262144`, `PRAGMA synchronous = OFF`} {
		if _, err := s.w.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	defer func() {
		if _, err := s.w.Exec(`PRAGMA synchronous = FULL`); err != nil {
			b.Fatal(err)
		}
	}()
	if err := seed(context.Background(), s); err != nil {
		s.Close()
		b.Fatalf("seed %s: %v", name, err)
	}
	b.Logf("seeded %s in %v", name, time.Since(start).Round(time.Millisecond))
	benchStores[name] = s
	return s
}

// insertRows inserts rows in multi-row INSERT statements of batch rows,
// all in one transaction.
func insertRows(ctx context.Context, tx *sql.Tx, head string, cols, n, batch int, row func(i int, args []any) []any) error {
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", cols), ",") + ")"
	full := head + strings.TrimSuffix(strings.Repeat(one+",", batch), ",")
	stmt, err := tx.PrepareContext(ctx, full)
	if err != nil {
		return err
	}
	defer stmt.Close()
	args := make([]any, 0, cols*batch)
	for i := 0; i < n; i += batch {
		k := min(batch, n-i)
		args = args[:0]
		for j := range k {
			args = row(i+j, args)
		}
		if k == batch {
			_, err = stmt.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, head+strings.TrimSuffix(strings.Repeat(one+",", k), ","), args...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func seedSessions(n int) func(ctx context.Context, s *Store) error {
	return func(ctx context.Context, s *Store) error {
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
		return s.writeTx(ctx, func(tx *sql.Tx) error {
			return insertRows(ctx, tx, `INSERT INTO sessions (id, agent_id, title, source, created_at, updated_at, archived) VALUES `, 7, n, 1000,
				func(i int, args []any) []any {
					// Update times are a permutation of the ids: index order differs from insert order.
					upd := base + int64((uint64(i)*2654435761)%uint64(n))*1000
					return append(args, fmt.Sprintf("mcp_%032x", i), "main", fmt.Sprintf("session %d", i), "mcp", base, upd, boolInt(i%10 == 0))
				})
		})
	}
}

func BenchmarkList100(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			s := benchStore(b, fmt.Sprintf("list%d", n), seedSessions(n))
			ctx := context.Background()
			for b.Loop() {
				got, err := s.ListSessions(ctx, 100)
				if err != nil || len(got) != 100 {
					b.Fatalf("ListSessions(100) = %d, %v", len(got), err)
				}
			}
		})
	}
}

func benchContent(i int) string {
	return fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum ", 10))
}

// BenchmarkBranch10000 reads a 10,000-message branch written in one run
// (one session at a time) and written as 5,000 two-message turns each
// interleaved with another session's turn (a new run per turn, the worst
// case).
func BenchmarkBranch10000(b *testing.B) {
	roles := []string{sessions.RoleUser, sessions.RoleAssistant}
	layouts := []struct {
		name string
		seed func(ctx context.Context, s *Store) error
	}{
		{"layout=one-run", func(ctx context.Context, s *Store) error {
			if _, err := s.CreateSession(ctx, sessions.Session{ID: "deep"}); err != nil {
				return err
			}
			msgs := make([]sessions.NewMessage, 10_000)
			for i := range msgs {
				msgs[i] = sessions.NewMessage{Role: roles[i%2], Content: benchContent(i)}
			}
			_, err := s.AppendMessages(ctx, "deep", "", msgs, true)
			return err
		}},
		{"layout=interleaved-turns", func(ctx context.Context, s *Store) error {
			heads := map[string]string{}
			for _, id := range []string{"deep", "other"} {
				if _, err := s.CreateSession(ctx, sessions.Session{ID: id}); err != nil {
					return err
				}
			}
			for i := 0; i < 10_000; i += 2 {
				for _, id := range []string{"deep", "other"} {
					got, err := s.AppendMessages(ctx, id, heads[id], []sessions.NewMessage{
						{Role: roles[0], Content: benchContent(i)}, {Role: roles[1], Content: benchContent(i + 1)},
					}, true)
					if err != nil {
						return err
					}
					heads[id] = got[1].ID
				}
			}
			return nil
		}},
	}
	for _, l := range layouts {
		b.Run(l.name, func(b *testing.B) {
			s := benchStore(b, "branch-"+l.name, l.seed)
			ctx := context.Background()
			for b.Loop() {
				got, err := s.Branch(ctx, "deep")
				if err != nil || len(got) != 10_000 {
					b.Fatalf("Branch = %d messages, %v", len(got), err)
				}
			}
		})
	}
}

func BenchmarkAppendTurn(b *testing.B) {
	s := benchStore(b, "append", func(ctx context.Context, s *Store) error {
		if err := seedSessions(10_000)(ctx, s); err != nil {
			return err
		}
		_, err := s.CreateSession(ctx, sessions.Session{ID: "turns"})
		return err
	})
	ctx := context.Background()
	sess, err := s.GetSession(ctx, "turns")
	if err != nil {
		b.Fatal(err)
	}
	head := sess.HeadID
	turn := []sessions.NewMessage{
		{Role: sessions.RoleUser, Content: "what is in the file?", Metadata: []byte(`{"speaker_kind":"client","speaker_id":"mcp/abc"}`)},
		{Role: sessions.RoleAssistant, Content: "It holds the quarterly numbers."},
	}
	for b.Loop() {
		got, err := s.AppendMessages(ctx, "turns", head, turn, true)
		if err != nil {
			b.Fatal(err)
		}
		head = got[len(got)-1].ID
	}
}

// vocabulary returns n pseudo-words; word i is drawn with Zipf-like
// frequency (rank 0 most common).
func vocabulary(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("w%dx", i)
	}
	return out
}

func BenchmarkSearch100k(b *testing.B) {
	const docs, words = 100_000, 40
	vocab := vocabulary(20_000)
	s := benchStore(b, "search", func(ctx context.Context, s *Store) error {
		rng := rand.New(rand.NewPCG(1, 2))
		zipf := rand.NewZipf(rng, 1.1, 1, uint64(len(vocab)-1))
		var sb strings.Builder
		now := time.Now().UnixMicro()
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			return insertRows(ctx, tx, `INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display,
				principal_id, authority_tier, interaction, source, revision, created_at) VALUES `, 11, docs, 500,
				func(i int, args []any) []any {
					sb.Reset()
					for w := range words {
						if w > 0 {
							sb.WriteByte(' ')
						}
						sb.WriteString(vocab[zipf.Uint64()])
					}
					return append(args, fmt.Sprintf("notes/%03d/%d.md", i%1000, i), sb.String(),
						"owner", "owner", "Owner", "p", "owner", "interactive", "cli", int64(i+1), now)
				})
		})
		if err != nil {
			return err
		}
		// The index build of migration 3 (ReindexMemory shares it), timed
		// on its own.
		start := time.Now()
		if err := s.ReindexMemory(ctx); err != nil {
			return err
		}
		b.Logf("indexed %d sources in %v", docs, time.Since(start).Round(time.Millisecond))
		_, err = s.w.ExecContext(ctx, `UPDATE memory_state SET revision = ?, sources = ?`, docs, docs)
		return err
	})
	var size int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(s.Path() + suffix); err == nil {
			size += fi.Size()
		}
	}
	b.Logf("database file with its WAL: %.1f MB", float64(size)/1e6)
	ctx := context.Background()
	for _, q := range []struct{ name, query, prefix string }{
		{"terms=1", vocab[300], ""},
		{"terms=2", vocab[40] + " " + vocab[60], ""},
		{"terms=2-common", vocab[20] + " " + vocab[30], ""},
		{"prefix", vocab[300], "notes/01"},
		{"common-term", vocab[2], ""},
		{"every-source", vocab[0], ""},
	} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				hits, err := s.SearchMemory(ctx, q.query, 10, q.prefix)
				if err != nil || len(hits) == 0 {
					b.Fatalf("SearchMemory(%q) = %d hits, %v", q.query, len(hits), err)
				}
			}
		})
	}
}

// BenchmarkTasks: storetest.BenchTasks on a fresh file.
func BenchmarkTasks(b *testing.B) {
	st, err := OpenWith(context.Background(), filepath.Join(b.TempDir(), DefaultFileName), &sessions.Options{AuditKey: storetest.Key})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	storetest.BenchTasks(b, st)
}
