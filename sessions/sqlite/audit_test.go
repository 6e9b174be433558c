package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
	"github.com/openprogram/openprogram/sessions/storetest"
)

// The database, not the process, keeps audit records append-only, also
// after the re-key, which rewrites the rows with the triggers dropped.
func TestAuditAppendOnlyInDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), DefaultFileName)
	st := openWith(t, path, nil)
	tm := tamperer{db: st.w}
	old := sessions.AuditRecord{ID: 1, TS: time.UnixMicro(1_700_000_000_000_000), Type: "t", Payload: []byte(`{}`), PrevHash: auditchain.Genesis}
	old.Hash = auditchain.RecordHash(old)
	if err := tm.InsertAudit(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	if err := tm.SetAuditHead(t.Context(), storetest.HeadRow{LastID: 1, LastHash: old.Hash}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, q := range []string{
			"UPDATE audit_log SET payload = '{}'",
			"DELETE FROM audit_log WHERE id = 1",
			"DELETE FROM audit_log",
		} {
			if _, err := st.w.ExecContext(t.Context(), q); err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: %s error = %v, want the append-only refusal", when, q, err)
			}
		}
	}
	check("unkeyed log")
	keyed := openWith(t, path, &sessions.Options{AuditKey: storetest.Key, AdoptUnkeyedLog: true})
	if _, err := keyed.AppendAudit(t.Context(), sessions.NewAuditRecord{Type: "t"}); err != nil {
		t.Fatalf("AppendAudit after the re-key: %v", err)
	}
	check("after the keyed open")
}
