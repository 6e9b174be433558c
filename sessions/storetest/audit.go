package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
)

var auditTests = []test{
	{"AppendTail", testAuditAppendTail},
	{"VerifyEmptyAndIntact", testAuditVerifyIntact},
	{"Concurrent", testAuditConcurrent},
	{"TamperEdit", testAuditTamperEdit},
	{"TamperDelete", testAuditTamperDelete},
	{"TamperDeleteLast", testAuditTamperDeleteLast},
	{"TamperSwap", testAuditTamperSwap},
}

func appendAudit(t *testing.T, s sessions.Store, n int) []sessions.AuditRecord {
	t.Helper()
	var out []sessions.AuditRecord
	for i := range n {
		r, err := s.AppendAudit(ctxT(t), sessions.NewAuditRecord{
			Type: "mcp.request.cancelled", Origin: "mcp", SessionID: fmt.Sprintf("s%d", i%3),
			Payload: json.RawMessage(fmt.Sprintf(`{"request_id":%d,"reason":"prompt_cancel","client_id":"abc"}`, i)),
		})
		if err != nil {
			t.Fatalf("AppendAudit %d error: %v", i, err)
		}
		out = append(out, r)
	}
	return out
}

func verify(t *testing.T, s sessions.Store) sessions.AuditReport {
	t.Helper()
	rep, err := s.VerifyAudit(ctxT(t))
	if err != nil {
		t.Fatalf("VerifyAudit error: %v", err)
	}
	return rep
}

func testAuditAppendTail(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	before := time.Now()
	r, err := s.AppendAudit(ctx, sessions.NewAuditRecord{Type: "server.start", Origin: "cli", Payload: json.RawMessage(`{ "pid" : 42, "b":[true,null], "a":"x<y" }`)})
	if err != nil {
		t.Fatalf("AppendAudit error: %v", err)
	}
	if r.ID != 1 {
		t.Errorf("first AppendAudit ID = %d, want 1", r.ID)
	}
	if r.TS.Before(before.Add(-time.Second)) || r.TS.After(time.Now().Add(time.Second)) {
		t.Errorf("AppendAudit TS = %v, want about now", r.TS)
	}
	if r.PrevHash != "0000000000000000000000000000000000000000000000000000000000000000" {
		t.Errorf("first record PrevHash = %q, want 64 zeros", r.PrevHash)
	}
	if len(r.Hash) != 64 || r.Hash == r.PrevHash {
		t.Errorf("Hash = %q, want 64 hex digits", r.Hash)
	}
	if !jsonEqual(r.Payload, json.RawMessage(`{"a":"x<y","b":[true,null],"pid":42}`)) {
		t.Errorf("Payload = %s, want the same JSON value", r.Payload)
	}
	if _, err := s.AppendAudit(ctx, sessions.NewAuditRecord{Type: "x", Payload: json.RawMessage(`{"a":`)}); err == nil {
		t.Errorf("AppendAudit(invalid JSON) succeeded, want an error")
	}
	if _, err := s.AppendAudit(ctx, sessions.NewAuditRecord{Origin: "mcp"}); err == nil {
		t.Errorf("AppendAudit(empty type) succeeded, want an error")
	}
	rest := appendAudit(t, s, 9)
	all := append([]sessions.AuditRecord{r}, rest...)
	for i := 1; i < len(all); i++ {
		if all[i].ID != all[i-1].ID+1 || all[i].PrevHash != all[i-1].Hash {
			t.Errorf("record %d (ID %d, prev %s) does not chain to record %d (ID %d, hash %s)",
				i, all[i].ID, all[i].PrevHash, i-1, all[i-1].ID, all[i-1].Hash)
		}
	}
	for _, n := range []int{1, 3, 10, 50} {
		got, err := s.TailAudit(ctx, n)
		if err != nil {
			t.Fatalf("TailAudit(%d) error: %v", n, err)
		}
		want := all[len(all)-min(n, len(all)):]
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("TailAudit(%d), newest last (-want +got):\n%s", n, diff)
		}
	}
	if got, err := s.TailAudit(ctx, 0); err != nil || len(got) != 0 {
		t.Errorf("TailAudit(0) = %d records, %v; want none", len(got), err)
	}
	empty, err := s.AppendAudit(ctx, sessions.NewAuditRecord{Type: "server.stop", Origin: "cli"})
	if err != nil {
		t.Fatalf("AppendAudit(no payload) error: %v", err)
	}
	if !jsonEqual(empty.Payload, json.RawMessage(`{}`)) {
		t.Errorf("AppendAudit(no payload).Payload = %s, want {}", empty.Payload)
	}
}

func testAuditVerifyIntact(t *testing.T, h *harness) {
	s := h.store(t)
	if diff := cmp.Diff(sessions.AuditReport{OK: true}, verify(t, s)); diff != "" {
		t.Errorf("VerifyAudit(empty) (-want +got):\n%s", diff)
	}
	appendAudit(t, s, 25)
	if diff := cmp.Diff(sessions.AuditReport{Records: 25, OK: true}, verify(t, s)); diff != "" {
		t.Errorf("VerifyAudit(25 intact records) (-want +got):\n%s", diff)
	}
}

func testAuditConcurrent(t *testing.T, h *harness) {
	a, b := h.pair(t)
	var wg sync.WaitGroup
	for _, s := range []sessions.Store{a, b, a, b} {
		wg.Go(func() {
			for i := range 15 {
				if _, err := s.AppendAudit(ctxT(t), sessions.NewAuditRecord{Type: "t", Origin: "o", Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}); err != nil {
					t.Errorf("concurrent AppendAudit error: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if diff := cmp.Diff(sessions.AuditReport{Records: 60, OK: true}, verify(t, b)); diff != "" {
		t.Errorf("VerifyAudit after concurrent appends from two handles (-want +got):\n%s", diff)
	}
}

// tampered appends five records, lets tamper edit the table and checks
// that VerifyAudit reports firstBad.
func tampered(t *testing.T, h *harness, firstBad int64, tamper func(Tamperer) error) {
	t.Helper()
	s := h.store(t)
	tm := h.tamperer(t, s)
	appendAudit(t, s, 5)
	if rep := verify(t, s); !rep.OK {
		t.Fatalf("VerifyAudit before tampering = %+v, want OK", rep)
	}
	if err := tamper(tm); err != nil {
		t.Fatalf("tampering failed: %v", err)
	}
	rep := verify(t, s)
	if rep.OK || rep.FirstBadID != firstBad || rep.Problem == "" {
		t.Errorf("VerifyAudit after tampering = %+v, want OK false, FirstBadID %d and a Problem", rep, firstBad)
	}
	// Appending to a broken chain keeps it reported broken.
	appendAudit(t, s, 1)
	if rep := verify(t, s); rep.OK {
		t.Errorf("VerifyAudit after tampering and another append = %+v, want still broken", rep)
	}
}

func testAuditTamperEdit(t *testing.T, h *harness) {
	tampered(t, h, 3, func(tm Tamperer) error {
		return tm.EditAuditPayload(ctxT(t), 3, `{"request_id":2,"reason":"request_cancelled","client_id":"abc"}`)
	})
}

func testAuditTamperDelete(t *testing.T, h *harness) {
	tampered(t, h, 3, func(tm Tamperer) error { return tm.DeleteAudit(ctxT(t), 3) })
}

func testAuditTamperDeleteLast(t *testing.T, h *harness) {
	tampered(t, h, 5, func(tm Tamperer) error { return tm.DeleteAudit(ctxT(t), 5) })
}

func testAuditTamperSwap(t *testing.T, h *harness) {
	tampered(t, h, 2, func(tm Tamperer) error { return tm.SwapAudit(ctxT(t), 2, 4) })
}
