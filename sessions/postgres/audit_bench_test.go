package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/postgres"
	"github.com/openprogram/openprogram/sessions/storetest"
)

// BenchmarkAuditAppendWriters is audit appends from 1, 8 and 64
// concurrent writers, each a store of its own (a process: its own pool)
// on one database, each appending one record at a time. It reports the
// appends per second of them all and the p50 and p99 latency of one
// append.
func BenchmarkAuditAppendWriters(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", n), func(b *testing.B) {
			db := newTestDB(b)
			stores := make([]*postgres.Store, n)
			for i := range stores {
				stores[i] = openStoreWith(b, db, auditBenchOptions(i))
				// The first append of a writer registers its key.
				if _, err := stores[i].AppendAudit(context.Background(), sessions.NewAuditRecord{Type: "bench.start", Origin: "bench"}); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			lat := make([][]time.Duration, n)
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for i, st := range stores {
				wg.Go(func() {
					for k := next.Add(1); k <= int64(b.N); k = next.Add(1) {
						t0 := time.Now()
						if _, err := st.AppendAudit(context.Background(), sessions.NewAuditRecord{Type: "mcp.prompt.requested", Origin: "mcp/bench",
							Payload: json.RawMessage(fmt.Sprintf(`{"request_id":%d,"client_id":"0123456789abcdef"}`, k))}); err != nil {
							b.Error(err)
							return
						}
						lat[i] = append(lat[i], time.Since(t0))
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) > 0 {
				b.ReportMetric(float64(len(all))/elapsed.Seconds(), "appends/s")
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
}

// BenchmarkAuditVerify walks a log of 20,000 records written by 4
// writers, 8 goroutines each (VerifyAudit whole), and reports the cost
// per record (to extrapolate to longer logs: the walk is linear).
func BenchmarkAuditVerify(b *testing.B) {
	const records, writers, each = 20_000, 4, 8
	db := newTestDB(b)
	stores := make([]*postgres.Store, writers)
	for i := range stores {
		stores[i] = openStoreWith(b, db, auditBenchOptions(i))
	}
	var wg sync.WaitGroup
	for i := range writers * each {
		st := stores[i%writers]
		wg.Go(func() {
			ctx := context.Background()
			for k := range records / writers / each {
				if _, err := st.AppendAudit(ctx, sessions.NewAuditRecord{Type: "mcp.prompt.requested", Origin: "mcp/bench",
					Payload: json.RawMessage(fmt.Sprintf(`{"request_id":%d,"writer":%d}`, k, i))}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ResetTimer()
	for b.Loop() {
		rep, err := stores[0].VerifyAudit(context.Background(), nil)
		if err != nil || !rep.OK || rep.Records < records {
			b.Fatalf("VerifyAudit = %+v, %v", rep, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/records, "µs/record")
}

// auditBenchOptions are the options of writer i: the audit key and a
// signing key of its own (one host each).
func auditBenchOptions(i int) *sessions.Options {
	return &sessions.Options{AuditKey: storetest.Key, AuditSigner: storetest.SigningKey(byte(i)), AuditSignerLabel: fmt.Sprintf("bench-%d", i)}
}
