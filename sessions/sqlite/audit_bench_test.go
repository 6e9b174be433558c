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

// BenchmarkVerifyAudit walks a chain of 10,000 records.
func BenchmarkVerifyAudit(b *testing.B) {
	st := benchStore(b, "audit10k", func(ctx context.Context, s *Store) error {
		for i := range 10_000 {
			if _, err := s.AppendAudit(ctx, benchAuditRecord(i)); err != nil {
				return err
			}
		}
		return nil
	})
	ctx := context.Background()
	for b.Loop() {
		rep, err := st.VerifyAudit(ctx, nil)
		if err != nil || !rep.OK {
			b.Fatalf("VerifyAudit = %+v, %v", rep, err)
		}
	}
}
