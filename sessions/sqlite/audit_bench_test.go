package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/storetest"
)

func benchAuditRecord(i int) sessions.NewAuditRecord {
	return sessions.NewAuditRecord{Type: "mcp.request.cancelled", Origin: "mcp/0123456789abcdef", SessionID: "mcp_s",
		Payload: json.RawMessage(fmt.Sprintf(`{"request_id":%d,"session_id":"mcp_s","client_id":"0123456789abcdef","reason":"prompt_cancel"}`, i))}
}

// BenchmarkAppendAudit is one audit append: a write transaction with a
// full fsync, the record's MAC and the head's seal.
func BenchmarkAppendAudit(b *testing.B) {
	st, err := OpenWith(context.Background(), filepath.Join(b.TempDir(), DefaultFileName), &sessions.Options{AuditKey: storetest.Key})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if _, err := st.AppendAudit(ctx, benchAuditRecord(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// audit10k is the benchmark store holding a chain of 10,000 records.
func audit10k(b *testing.B) *Store {
	return benchStore(b, "audit10k", func(ctx context.Context, s *Store) error {
		for i := range 10_000 {
			if _, err := s.AppendAudit(ctx, benchAuditRecord(i)); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkVerifyAudit walks a chain of 10,000 records.
func BenchmarkVerifyAudit(b *testing.B) {
	st := audit10k(b)
	ctx := context.Background()
	for b.Loop() {
		rep, err := st.VerifyAudit(ctx, nil)
		if err != nil || !rep.OK {
			b.Fatalf("VerifyAudit = %+v, %v", rep, err)
		}
	}
}

// BenchmarkCheckAuditAnchor is the start-time anchor check on a chain of
// 10,000 records: the sealed head and the one anchored record, whatever
// the log's length (compare BenchmarkVerifyAudit).
func BenchmarkCheckAuditAnchor(b *testing.B) {
	st := audit10k(b)
	ctx := context.Background()
	recs, err := st.TailAudit(ctx, 5000)
	if err != nil {
		b.Fatal(err)
	}
	anchor := &sessions.AuditHead{ID: recs[0].ID, MAC: recs[0].Hash}
	for b.Loop() {
		if _, err := st.CheckAuditAnchor(ctx, anchor); err != nil {
			b.Fatal(err)
		}
	}
}
