package host

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/tokenauth"
)

// BenchmarkAnchoredAppend is one audit append on the embedded store, bare
// and through the anchored store every writing front end gets from
// openStore: the anchor is not on the append path, so the two must not
// differ (compare the sub-benchmarks with benchstat).
func BenchmarkAnchoredAppend(b *testing.B) {
	for _, anchored := range []bool{false, true} {
		name := "bare"
		if anchored {
			name = "anchored"
		}
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "state")
			if err := EnsureStateDir(dir); err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			var st sessions.Store
			st, err := sessions.OpenWith(ctx, "sqlite:"+filepath.Join(dir, "openprogram.db"),
				&sessions.Options{AuditKey: bytes.Repeat([]byte{7}, tokenauth.KeySize)})
			if err != nil {
				b.Fatal(err)
			}
			if anchored {
				if st, err = holdAnchor(ctx, st, tokenauth.AnchorPath(dir), slog.New(slog.DiscardHandler)); err != nil {
					b.Fatal(err)
				}
			}
			defer st.Close()
			rec := sessions.NewAuditRecord{Type: "mcp.tool.requested", Origin: "mcp/0123456789abcdef",
				Payload: json.RawMessage(`{"request_id":1,"tool":"memory_search","client_id":"0123456789abcdef"}`)}
			for b.Loop() {
				if _, err := st.AppendAudit(ctx, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
