package memory_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/builtin/memory"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/sqlite"
)

const benchSources = 100_000

// benchCorpus returns n deterministic sources of 12-30 words drawn from a
// 5 000-word vocabulary, one path per 10 sources.
func benchCorpus(n int) (paths, contents []string) {
	r := rand.New(rand.NewPCG(1, 2))
	paths = make([]string, n)
	contents = make([]string, n)
	var b strings.Builder
	for i := range n {
		b.Reset()
		for w := range 12 + r.IntN(19) {
			if w > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "term%04d", r.IntN(5000))
		}
		paths[i] = fmt.Sprintf("notes/%03d/%05d.md", i%1000, i/10)
		contents[i] = b.String()
	}
	return paths, contents
}

// Seeding 100 000 sources through AppendSource takes minutes (each append
// is its own durable transaction), so the benchmark seeds the SQLite
// tables directly in one transaction. The store's own search at this size,
// on both backends, is sessions/sqlite and sessions/postgres
// BenchmarkSearch100k; this one adds the tool layer (schema check,
// executor, JSON result) on top, which does not depend on the backend. It checks the result through the
// Store API so a schema change fails loudly instead of benchmarking an
// empty store.

func seedSQLite(b *testing.B) sessions.Store {
	b.Helper()
	path := b.TempDir() + "/bench.db"
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	paths, contents := benchCorpus(benchSources)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO memory_sources (path, content, speaker_kind, speaker_id, speaker_display,
		principal_id, authority_tier, interaction, source, revision, created_at) VALUES (?, ?, 'owner', 'owner', 'Owner', ?, 'owner', 'interactive', 'cli', ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UnixMicro()
	for i := range paths {
		if _, err := ins.ExecContext(ctx, paths[i], contents[i], principal, i+1, now); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE memory_state SET revision = ?, sources = ? WHERE id = 1`, benchSources, benchSources); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	db.Close()
	st, err = sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	// The rows went in around the store: build their search index.
	if err := st.ReindexMemory(ctx); err != nil {
		b.Fatal(err)
	}
	return st
}

func BenchmarkMemorySearch100k(b *testing.B) {
	for _, bk := range []struct {
		name string
		seed func(*testing.B) sessions.Store
	}{{"sqlite", seedSQLite}} {
		b.Run(bk.name, func(b *testing.B) {
			st := bk.seed(b)
			ctx := context.Background()
			ms, err := st.MemoryStatus(ctx)
			if err != nil || ms.Sources != benchSources {
				b.Fatalf("seeded store status = %+v, %v; want %d sources", ms, err, benchSources)
			}
			reg := tool.NewRegistry()
			for _, tl := range memory.Tools(st) {
				if err := reg.Register(tl); err != nil {
					b.Fatal(err)
				}
			}
			search, _ := reg.Get("memory_search")
			ex := tool.NewExecutor(nil)
			owner, err := authz.NewOwner(principal, true, authz.Scope{})
			if err != nil {
				b.Fatal(err)
			}
			cctx := tool.WithCall(ctx, tool.CallInfo{Speaker: owner})
			queries := []string{"term0042", "term1234 term4321", "term0007 term0008 term0009", "term4999"}
			args := make([]json.RawMessage, len(queries))
			for i, q := range queries {
				args[i], _ = json.Marshal(map[string]any{"query": q, "top_k": 10})
			}
			res := ex.Execute(cctx, search, "c", args[0], nil)
			if res.IsError || !strings.Contains(res.Text(), `"layer":"source"`) {
				b.Fatalf("memory_search on the seeded store = %s", res.Text())
			}
			b.ResetTimer()
			i := 0
			for b.Loop() {
				if res := ex.Execute(cctx, search, "c", args[i%len(args)], nil); res.IsError {
					b.Fatal(res.Text())
				}
				i++
			}
		})
	}
}
