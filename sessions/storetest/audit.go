package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
)

var auditTests = []test{
	{"AppendTail", testAuditAppendTail},
	{"VerifyEmptyAndIntact", testAuditVerifyIntact},
	{"Concurrent", testAuditConcurrent},
	{"TamperEdit", testAuditTamperEdit},
	{"TamperDelete", testAuditTamperDelete},
	{"TamperDeleteLast", testAuditTamperDeleteLast},
	{"TamperDeleteTailMoveHead", testAuditTamperDeleteTailMoveHead},
	{"TamperDeleteAllResetHead", testAuditTamperDeleteAllResetHead},
	{"TamperDeleteAllUnkey", testAuditTamperDeleteAllUnkey},
	{"TamperInsert", testAuditTamperInsert},
	{"TamperSwap", testAuditTamperSwap},
	{"TamperRecomputeOtherKey", testAuditTamperRecomputeOtherKey},
	{"TamperRecomputeUnkeyed", testAuditTamperRecomputeUnkeyed},
	{"TamperRecomputeKeepKeyID", testAuditTamperRecomputeKeepKeyID},
	{"AnchorCatchesTruncation", testAuditAnchor},
	{"CheckAnchor", testAuditCheckAnchor},
	{"CheckAnchorNotSkippedByKeyID", testAuditCheckAnchorKeyID},
	{"WrongKey", testAuditWrongKey},
	{"NoKey", testAuditNoKey},
	{"Rekey", testAuditRekey},
	{"RekeyRefusesBrokenLog", testAuditRekeyBroken},
	{"UnkeyedNotAdopted", testAuditUnkeyedNotAdopted},
}

func appendAudit(t *testing.T, s sessions.Store, n int) []sessions.AuditRecord {
	t.Helper()
	var out []sessions.AuditRecord
	for i := range n {
		r, err := s.AppendAudit(ctxT(t), sessions.NewAuditRecord{
			Type: "mcp.request.cancelled", Origin: "mcp", SessionID: fmt.Sprintf("s%d", i%3),
			Payload: json.RawMessage(fmt.Sprintf(`{"request_id":%d,"reason":"prompt_cancel","client_id":"abc"}`, i)),
		})
		noErr(t, err, "AppendAudit %d", i)
		out = append(out, r)
	}
	return out
}

func verify(t *testing.T, s sessions.Store) sessions.AuditReport {
	t.Helper()
	return verifyAnchored(t, s, nil)
}

// wantAppendRefused fails the test unless an append to s fails with
// ErrAuditKey; what says to which log.
func wantAppendRefused(t *testing.T, s sessions.Store, what string) {
	t.Helper()
	_, err := s.AppendAudit(ctxT(t), sessions.NewAuditRecord{Type: "t"})
	wantErr(t, "AppendAudit "+what, err, sessions.ErrAuditKey)
}

// wantBroken logs rep as `openprogram audit verify` prints it, and fails
// the test unless rep reports the log broken at record firstBad (at any
// record when 0) with a problem saying problem; what says which
// verification it was.
func wantBroken(t *testing.T, what string, rep sessions.AuditReport, firstBad int64, problem string) {
	t.Helper()
	t.Logf("audit verify %s: %s", what, reportLine(rep))
	if rep.OK || (firstBad != 0 && rep.FirstBadID != firstBad) || !strings.Contains(rep.Problem, problem) {
		t.Errorf("VerifyAudit %s = %+v, want broken at record %d with a problem saying %q", what, rep, firstBad, problem)
	}
}

func verifyAnchored(t *testing.T, s sessions.Store, anchor *sessions.AuditHead) sessions.AuditReport {
	t.Helper()
	rep, err := s.VerifyAudit(ctxT(t), anchor)
	noErr(t, err, "VerifyAudit")
	return rep
}

func testAuditAppendTail(t *testing.T, h *harness) {
	s := h.store(t)
	ctx := ctxT(t)
	before := time.Now()
	r, err := s.AppendAudit(ctx, sessions.NewAuditRecord{Type: "server.start", Origin: "cli", Payload: json.RawMessage(`{ "pid" : 42, "b":[true,null], "a":"x<y" }`)})
	noErr(t, err, "AppendAudit")
	if r.ID != 2 {
		t.Errorf("first AppendAudit ID = %d, want 2 (record 1 is the %s record of a new store)", r.ID, auditchain.RekeyType)
	}
	if r.TS.Before(before.Add(-time.Second)) || r.TS.After(time.Now().Add(time.Second)) {
		t.Errorf("AppendAudit TS = %v, want about now", r.TS)
	}
	first, err := s.TailAudit(ctx, 2)
	if err != nil || len(first) != 2 {
		t.Fatalf("TailAudit(2) = %d records, %v; want 2", len(first), err)
	}
	if k := first[0]; k.ID != 1 || k.Type != auditchain.RekeyType || k.PrevHash != auditchain.Genesis || !jsonEqual(k.Payload, json.RawMessage(`{"rekeyed":0}`)) {
		t.Errorf("record 1 = %+v, want the %s record after the genesis hash, payload {\"rekeyed\":0}", k, auditchain.RekeyType)
	}
	if r.PrevHash != first[0].Hash {
		t.Errorf("first appended record PrevHash = %q, want record 1's MAC %q", r.PrevHash, first[0].Hash)
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
	rest := appendAudit(t, s, 8)
	all := append([]sessions.AuditRecord{first[0], r}, rest...)
	for i := 1; i < len(all); i++ {
		if all[i].ID != all[i-1].ID+1 || all[i].PrevHash != all[i-1].Hash {
			t.Errorf("record %d (ID %d, prev %s) does not chain to record %d (ID %d, hash %s)",
				i, all[i].ID, all[i].PrevHash, i-1, all[i-1].ID, all[i-1].Hash)
		}
	}
	for _, n := range []int{1, 3, 10, 50} {
		got, err := s.TailAudit(ctx, n)
		noErr(t, err, "TailAudit(%d)", n)
		want := all[len(all)-min(n, len(all)):]
		if diff := cmp.Diff(want, got, cmpOpts...); diff != "" {
			t.Errorf("TailAudit(%d), newest last (-want +got):\n%s", n, diff)
		}
	}
	if got, err := s.TailAudit(ctx, 0); err != nil || len(got) != 0 {
		t.Errorf("TailAudit(0) = %d records, %v; want none", len(got), err)
	}
	empty, err := s.AppendAudit(ctx, sessions.NewAuditRecord{Type: "server.stop", Origin: "cli"})
	noErr(t, err, "AppendAudit(no payload)")
	if !jsonEqual(empty.Payload, json.RawMessage(`{}`)) {
		t.Errorf("AppendAudit(no payload).Payload = %s, want {}", empty.Payload)
	}
}

func testAuditVerifyIntact(t *testing.T, h *harness) {
	s := h.store(t)
	if diff := cmp.Diff(sessions.AuditReport{Records: 1, OK: true}, verify(t, s)); diff != "" {
		t.Errorf("VerifyAudit(new store) (-want +got):\n%s", diff)
	}
	appendAudit(t, s, 25)
	if diff := cmp.Diff(sessions.AuditReport{Records: 26, OK: true}, verify(t, s)); diff != "" {
		t.Errorf("VerifyAudit(25 intact records after the key record) (-want +got):\n%s", diff)
	}
}

func testAuditConcurrent(t *testing.T, h *harness) {
	a, b := h.pair(t)
	appendAuditConcurrently(t, 15, a, b, a, b)
	if diff := cmp.Diff(sessions.AuditReport{Records: 61, OK: true}, verify(t, b)); diff != "" {
		t.Errorf("VerifyAudit after concurrent appends from two handles (-want +got):\n%s", diff)
	}
}

// appendAuditConcurrently appends n audit records to each of stores (a store named
// twice appends from two goroutines), all at once.
func appendAuditConcurrently(t *testing.T, n int, stores ...sessions.Store) {
	t.Helper()
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Go(func() {
			for i := range n {
				if _, err := s.AppendAudit(ctxT(t), sessions.NewAuditRecord{Type: "t", Origin: "o", Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}); err != nil {
					t.Errorf("concurrent AppendAudit error: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// tampered appends five records (ids 2 to 6, after the key record), lets
// tamper edit the tables and checks that VerifyAudit reports firstBad with
// a problem that says want. It logs what verify reported, for the record.
func tampered(t *testing.T, h *harness, firstBad int64, want string, tamper func(Tamperer, sessions.Store, []sessions.AuditRecord) error) {
	t.Helper()
	s := h.store(t)
	tm := h.tamperer(t, s)
	recs := appendAudit(t, s, 5)
	if rep := verify(t, s); !rep.OK {
		t.Fatalf("VerifyAudit before tampering = %+v, want OK", rep)
	}
	if err := tamper(tm, s, recs); err != nil {
		t.Fatalf("tampering failed: %v", err)
	}
	wantBroken(t, "after tampering", verify(t, s), firstBad, want)
	// Appending to a tampered chain fails or keeps it reported broken.
	if _, err := s.AppendAudit(ctxT(t), sessions.NewAuditRecord{Type: "t", Origin: "o"}); err == nil {
		if rep := verify(t, s); rep.OK {
			t.Errorf("VerifyAudit after tampering and another append = %+v, want still broken", rep)
		}
	}
}

// reportLine is what `openprogram audit verify` prints for rep.
func reportLine(rep sessions.AuditReport) string {
	if rep.OK {
		return fmt.Sprintf("audit log intact: %d records", rep.Records)
	}
	return fmt.Sprintf("audit log broken at record %d: %s (%d records checked)", rep.FirstBadID, rep.Problem, rep.Records)
}

func headRow(t *testing.T, tm Tamperer) HeadRow {
	t.Helper()
	h, err := tm.AuditHead(ctxT(t))
	if err != nil {
		t.Fatalf("read the audit head: %v", err)
	}
	return h
}

func testAuditTamperEdit(t *testing.T, h *harness) {
	tampered(t, h, 3, "does not match its MAC", func(tm Tamperer, _ sessions.Store, _ []sessions.AuditRecord) error {
		return tm.EditAuditPayload(ctxT(t), 3, `{"request_id":2,"reason":"request_cancelled","client_id":"abc"}`)
	})
}

func testAuditTamperDelete(t *testing.T, h *harness) {
	tampered(t, h, 3, "missing", func(tm Tamperer, _ sessions.Store, _ []sessions.AuditRecord) error { return tm.DeleteAudit(ctxT(t), 3) })
}

func testAuditTamperDeleteLast(t *testing.T, h *harness) {
	tampered(t, h, 6, "missing", func(tm Tamperer, _ sessions.Store, _ []sessions.AuditRecord) error { return tm.DeleteAudit(ctxT(t), 6) })
}

// The newest records deleted and the head moved back onto the record
// before them, as the first version could not catch: the head's seal is
// the old head's.
func testAuditTamperDeleteTailMoveHead(t *testing.T, h *harness) {
	tampered(t, h, 5, "moved back", func(tm Tamperer, _ sessions.Store, recs []sessions.AuditRecord) error {
		head := headRow(t, tm)
		for _, id := range []int64{6, 5} {
			if err := tm.DeleteAudit(ctxT(t), id); err != nil {
				return err
			}
		}
		head.LastID, head.LastHash = 4, recs[2].Hash
		return tm.SetAuditHead(ctxT(t), head)
	})
}

func testAuditTamperDeleteAllResetHead(t *testing.T, h *harness) {
	tampered(t, h, 1, "moved back", func(tm Tamperer, _ sessions.Store, _ []sessions.AuditRecord) error {
		head := headRow(t, tm)
		for id := int64(1); id <= 6; id++ {
			if err := tm.DeleteAudit(ctxT(t), id); err != nil {
				return err
			}
		}
		return tm.SetAuditHead(ctxT(t), HeadRow{LastHash: auditchain.Genesis, KeyID: head.KeyID})
	})
}

// Everything deleted and the head made to look like a store that was never
// keyed: the store does not adopt it (its key is not new), and verify says
// the log is not keyed.
func testAuditTamperDeleteAllUnkey(t *testing.T, h *harness) {
	tampered(t, h, 1, "not keyed", func(tm Tamperer, _ sessions.Store, _ []sessions.AuditRecord) error {
		for id := int64(1); id <= 6; id++ {
			if err := tm.DeleteAudit(ctxT(t), id); err != nil {
				return err
			}
		}
		return tm.SetAuditHead(ctxT(t), HeadRow{LastHash: auditchain.Genesis})
	})
}

// A record inserted at the end, the head moved onto it: its MAC cannot be
// made without the key (here: the unkeyed hash of the first version).
func testAuditTamperInsert(t *testing.T, h *harness) {
	tampered(t, h, 7, "does not match its MAC", func(tm Tamperer, _ sessions.Store, recs []sessions.AuditRecord) error {
		last := recs[len(recs)-1]
		forged := sessions.AuditRecord{ID: 7, TS: last.TS.Add(time.Millisecond), Type: "mcp.server.stop", Origin: "mcp",
			Payload: json.RawMessage(`{}`), PrevHash: last.Hash}
		forged.Hash = auditchain.RecordHash(forged)
		if err := tm.InsertAudit(ctxT(t), forged); err != nil {
			return err
		}
		head := headRow(t, tm)
		head.LastID, head.LastHash = forged.ID, forged.Hash
		return tm.SetAuditHead(ctxT(t), head)
	})
}

func testAuditTamperSwap(t *testing.T, h *harness) {
	tampered(t, h, 3, "does not follow", func(tm Tamperer, _ sessions.Store, _ []sessions.AuditRecord) error {
		return tm.SwapAudit(ctxT(t), 3, 5)
	})
}

// recompute rewrites the whole chain (record 3 edited first) the way an
// attacker without the key can: mac computes each record's hash, head
// stores the head.
func recompute(t *testing.T, tm Tamperer, s sessions.Store, mac func(sessions.AuditRecord) string, head func(last sessions.AuditRecord) HeadRow) error {
	t.Helper()
	all, err := s.TailAudit(ctxT(t), 100)
	if err != nil {
		return err
	}
	all[2].Payload = json.RawMessage(`{"client_id":"abc","reason":"request_cancelled","request_id":1}`)
	prev := auditchain.Genesis
	var last sessions.AuditRecord
	for _, r := range all {
		r.PrevHash = prev
		r.Hash = mac(r)
		prev = r.Hash
		if err := tm.RewriteAudit(ctxT(t), r); err != nil {
			return err
		}
		last = r
	}
	return tm.SetAuditHead(ctxT(t), head(last))
}

var otherKey = bytes.Repeat([]byte{0xa5}, 32)

// The chain and its head recomputed under the attacker's own key, naming
// that key: the records verify under no key the host has.
func testAuditTamperRecomputeOtherKey(t *testing.T, h *harness) {
	tampered(t, h, 1, "recomputed without the key", func(tm Tamperer, s sessions.Store, _ []sessions.AuditRecord) error {
		return recompute(t, tm, s, func(r sessions.AuditRecord) string { return auditchain.RecordMAC(otherKey, r) },
			func(last sessions.AuditRecord) HeadRow {
				hd := auditchain.Seal(otherKey, last)
				return HeadRow{LastID: hd.ID, LastHash: hd.Hash, KeyID: hd.KeyID, MAC: hd.MAC}
			})
	})
}

// The chain recomputed with the unkeyed hash of the first version and the
// head made unkeyed: not adopted, reported as not keyed.
func testAuditTamperRecomputeUnkeyed(t *testing.T, h *harness) {
	tampered(t, h, 1, "not keyed", func(tm Tamperer, s sessions.Store, _ []sessions.AuditRecord) error {
		return recompute(t, tm, s, auditchain.RecordHash, func(last sessions.AuditRecord) HeadRow {
			return HeadRow{LastID: last.ID, LastHash: last.Hash}
		})
	})
}

// The chain recomputed under another key, the head still naming the real
// one: record 1 fails its MAC.
func testAuditTamperRecomputeKeepKeyID(t *testing.T, h *harness) {
	tampered(t, h, 1, "does not match its MAC", func(tm Tamperer, s sessions.Store, _ []sessions.AuditRecord) error {
		return recompute(t, tm, s, func(r sessions.AuditRecord) string { return auditchain.RecordMAC(otherKey, r) },
			func(last sessions.AuditRecord) HeadRow {
				hd := auditchain.Seal(otherKey, last)
				return HeadRow{LastID: hd.ID, LastHash: hd.Hash, KeyID: auditchain.KeyID(Key), MAC: hd.MAC}
			})
	})
}

// Even a holder of the key who truncates the log and reseals the head is
// caught by a head anchored earlier.
func testAuditAnchor(t *testing.T, h *harness) {
	s := h.store(t)
	tm := h.tamperer(t, s)
	recs := appendAudit(t, s, 8) // ids 2..9
	anchor := &sessions.AuditHead{ID: recs[7].ID, MAC: recs[7].Hash}
	if rep := verifyAnchored(t, s, anchor); !rep.OK || rep.Records != 9 {
		t.Fatalf("VerifyAudit(anchor at the head) = %+v, want 9 intact records", rep)
	}
	older := &sessions.AuditHead{ID: recs[3].ID, MAC: recs[3].Hash}
	if rep := verifyAnchored(t, s, older); !rep.OK {
		t.Errorf("VerifyAudit(anchor at record %d) = %+v, want OK: the log extends it", older.ID, rep)
	}
	bogus := &sessions.AuditHead{ID: recs[3].ID, MAC: recs[4].Hash}
	wantBroken(t, "with an anchor of another MAC", verifyAnchored(t, s, bogus), bogus.ID, "")
	for id := int64(9); id >= 7; id-- {
		if err := tm.DeleteAudit(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
	}
	hd := auditchain.Seal(Key, recs[4])
	if err := tm.SetAuditHead(ctxT(t), HeadRow{LastID: hd.ID, LastHash: hd.Hash, KeyID: hd.KeyID, MAC: hd.MAC}); err != nil {
		t.Fatal(err)
	}
	if rep := verify(t, s); !rep.OK || rep.Records != 6 {
		t.Fatalf("VerifyAudit after a truncation resealed with the key = %+v, want 6 intact records (only an anchor catches it)", rep)
	}
	wantBroken(t, fmt.Sprintf("--head %d:%s after truncation to record 6", anchor.ID, anchor.MAC),
		verifyAnchored(t, s, anchor), 7, "no longer extends the anchored head")
}

// testAuditCheckAnchor: CheckAuditAnchor returns the sealed head, and
// refuses with ErrAuditAnchor a log that no longer holds the anchored
// record: another MAC, cut back, or a new log in its place.
func testAuditCheckAnchor(t *testing.T, h *harness) {
	s := h.store(t)
	tm := h.tamperer(t, s)
	recs := appendAudit(t, s, 5) // ids 2..6
	last := sessions.AuditHead{ID: recs[4].ID, MAC: recs[4].Hash}
	if got, err := s.CheckAuditAnchor(ctxT(t), nil); err != nil || got != last {
		t.Fatalf("CheckAuditAnchor(nil) = %+v, %v; want the head %+v", got, err, last)
	}
	older := sessions.AuditHead{ID: recs[1].ID, MAC: recs[1].Hash}
	for _, a := range []sessions.AuditHead{last, older} {
		if got, err := s.CheckAuditAnchor(ctxT(t), &a); err != nil || got != last {
			t.Errorf("CheckAuditAnchor(%d) = %+v, %v; want the head %+v", a.ID, got, err, last)
		}
	}
	for name, a := range map[string]sessions.AuditHead{
		"another MAC":     {ID: older.ID, MAC: last.MAC},
		"beyond the head": {ID: last.ID + 1, MAC: last.MAC},
	} {
		if _, err := s.CheckAuditAnchor(ctxT(t), &a); !errors.Is(err, sessions.ErrAuditAnchor) {
			t.Errorf("CheckAuditAnchor(%s) = %v, want ErrAuditAnchor", name, err)
		}
	}
	// A new log in the old one's place (the database emptied or recreated).
	fresh := h.store(t)
	_, err := fresh.CheckAuditAnchor(ctxT(t), &last)
	t.Logf("CheckAuditAnchor on a new log: %v", err)
	if !errors.Is(err, sessions.ErrAuditAnchor) {
		t.Errorf("CheckAuditAnchor on a new log = %v, want ErrAuditAnchor", err)
	}
	if _, err := fresh.CheckAuditAnchor(ctxT(t), &sessions.AuditHead{ID: 1, MAC: recs[0].PrevHash}); !errors.Is(err, sessions.ErrAuditAnchor) {
		t.Errorf("CheckAuditAnchor(record 1 of another log) on a new log = %v, want ErrAuditAnchor", err)
	}
	// A tail cut off and the head resealed by a key holder.
	for id := last.ID; id > older.ID; id-- {
		if err := tm.DeleteAudit(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
	}
	hd := auditchain.Seal(Key, recs[1])
	if err := tm.SetAuditHead(ctxT(t), HeadRow{LastID: hd.ID, LastHash: hd.Hash, KeyID: hd.KeyID, MAC: hd.MAC}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckAuditAnchor(ctxT(t), &last); !errors.Is(err, sessions.ErrAuditAnchor) {
		t.Errorf("CheckAuditAnchor after a truncation resealed with the key = %v, want ErrAuditAnchor", err)
	}
	if got, err := s.CheckAuditAnchor(ctxT(t), &older); err != nil || got != older {
		t.Errorf("CheckAuditAnchor(%d) after the truncation = %+v, %v; want the head %+v", older.ID, got, err, older)
	}
	// The head moved back without the key: its seal fails.
	if err := tm.SetAuditHead(ctxT(t), HeadRow{LastID: recs[0].ID, LastHash: recs[0].Hash, KeyID: hd.KeyID, MAC: hd.MAC}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckAuditAnchor(ctxT(t), nil); !errors.Is(err, sessions.ErrAuditBroken) {
		t.Errorf("CheckAuditAnchor with a head that fails its seal = %v, want ErrAuditBroken", err)
	}
	bare := h.reopen(t, s, nil)
	if _, err := bare.CheckAuditAnchor(ctxT(t), nil); !errors.Is(err, sessions.ErrAuditKey) {
		t.Errorf("CheckAuditAnchor without a key = %v, want ErrAuditKey", err)
	}
}

// testAuditCheckAnchorKeyID: a database writer who cuts the tail behind
// the anchor and names another key in the head cannot turn the anchor
// check into a warning about the key: the anchored record is gone, and
// that is reported first, whatever the head's columns say.
func testAuditCheckAnchorKeyID(t *testing.T, h *harness) {
	s := h.store(t)
	tm := h.tamperer(t, s)
	recs := appendAudit(t, s, 5) // ids 2..6
	anchor := sessions.AuditHead{ID: recs[4].ID, MAC: recs[4].Hash}
	for id := anchor.ID; id > recs[1].ID; id-- {
		if err := tm.DeleteAudit(ctxT(t), id); err != nil {
			t.Fatal(err)
		}
	}
	head := headRow(t, tm)
	for _, keyID := range []string{"0123456789abcdef", ""} {
		head.LastID, head.LastHash, head.KeyID = recs[1].ID, recs[1].Hash, keyID
		if err := tm.SetAuditHead(ctxT(t), head); err != nil {
			t.Fatal(err)
		}
		_, err := s.CheckAuditAnchor(ctxT(t), &anchor)
		t.Logf("CheckAuditAnchor after the tail was cut and the head named key %q: %v", keyID, err)
		if !errors.Is(err, sessions.ErrAuditAnchor) {
			t.Errorf("CheckAuditAnchor after the tail was cut and the head named key %q = %v, want ErrAuditAnchor", keyID, err)
		}
	}
	bare := h.reopen(t, s, nil)
	if _, err := bare.CheckAuditAnchor(ctxT(t), &anchor); !errors.Is(err, sessions.ErrAuditAnchor) {
		t.Errorf("CheckAuditAnchor without a key after the tail was cut = %v, want ErrAuditAnchor", err)
	}
}

func testAuditWrongKey(t *testing.T, h *harness) {
	s := h.store(t)
	appendAudit(t, s, 3)
	other := h.reopen(t, s, &sessions.Options{AuditKey: otherKey, AdoptUnkeyedLog: true})
	wantBroken(t, "with another key", verify(t, other), 1, "does not match the key")
	wantAppendRefused(t, other, "with another key")
	if rep := verify(t, s); !rep.OK || rep.Records != 4 {
		t.Errorf("VerifyAudit with the right key after the refused append = %+v, want 4 intact records", rep)
	}
}

func testAuditNoKey(t *testing.T, h *harness) {
	s := h.store(t)
	appendAudit(t, s, 2)
	bare := h.reopen(t, s, nil)
	wantAppendRefused(t, bare, "without a key")
	if _, err := bare.VerifyAudit(ctxT(t), nil); !errors.Is(err, sessions.ErrAuditKey) {
		t.Errorf("VerifyAudit without a key = %v, want ErrAuditKey", err)
	}
	if got, err := bare.TailAudit(ctxT(t), 10); err != nil || len(got) != 3 {
		t.Errorf("TailAudit without a key = %d records, %v; want 3", len(got), err)
	}
	fresh := h.storeWith(t, nil)
	wantAppendRefused(t, fresh, "on a new store without a key")
}

// unkeyedLog returns a store holding a log of the first version: n records
// chained with the unkeyed SHA-256 hash, written past the store (which
// cannot write unkeyed records), and its tamperer.
func unkeyedLog(t *testing.T, h *harness, n int) (sessions.Store, Tamperer, []sessions.AuditRecord) {
	t.Helper()
	s := h.storeWith(t, nil)
	tm := h.tamperer(t, s)
	prev := auditchain.Genesis
	ts := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	var recs []sessions.AuditRecord
	for i := range n {
		r := sessions.AuditRecord{ID: int64(i + 1), TS: ts.Add(time.Duration(i) * time.Second), Type: "mcp.server.start",
			Origin: "mcp", SessionID: fmt.Sprintf("s%d", i), Payload: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)), PrevHash: prev}
		r.Hash = auditchain.RecordHash(r)
		prev = r.Hash
		if err := tm.InsertAudit(ctxT(t), r); err != nil {
			t.Fatalf("insert unkeyed record %d: %v", r.ID, err)
		}
		recs = append(recs, r)
	}
	if err := tm.SetAuditHead(ctxT(t), HeadRow{LastID: int64(n), LastHash: prev}); err != nil {
		t.Fatal(err)
	}
	return s, tm, recs
}

func testAuditRekey(t *testing.T, h *harness) {
	s, tm, old := unkeyedLog(t, h, 7)
	keyed := h.reopen(t, s, &sessions.Options{AuditKey: Key, AdoptUnkeyedLog: true})
	rep := verify(t, keyed)
	if diff := cmp.Diff(sessions.AuditReport{Records: 8, OK: true}, rep); diff != "" {
		t.Fatalf("VerifyAudit after re-keying (-want +got):\n%s", diff)
	}
	got, err := keyed.TailAudit(ctxT(t), 100)
	if err != nil || len(got) != 8 {
		t.Fatalf("TailAudit after re-keying = %d records, %v; want 8", len(got), err)
	}
	for i, r := range old {
		g := got[i]
		if g.ID != r.ID || g.Type != r.Type || g.SessionID != r.SessionID || !jsonEqual(g.Payload, r.Payload) || !g.TS.Equal(r.TS) {
			t.Errorf("record %d after re-keying = %+v, want the content of %+v", r.ID, g, r)
		}
		if g.Hash == r.Hash || g.Hash != auditchain.RecordMAC(Key, g) {
			t.Errorf("record %d hash after re-keying = %s, want its MAC under the key, not the old hash", r.ID, g.Hash)
		}
	}
	mark := got[7]
	want := fmt.Sprintf(`{"rekeyed":7,"unkeyed_head":%q}`, old[6].Hash)
	if mark.Type != auditchain.RekeyType || !jsonEqual(mark.Payload, json.RawMessage(want)) {
		t.Errorf("record 8 = %s %s, want %s %s", mark.Type, mark.Payload, auditchain.RekeyType, want)
	}
	// Once: opening again (adopting or not) changes nothing.
	again := h.reopen(t, s, &sessions.Options{AuditKey: Key, AdoptUnkeyedLog: true})
	if rep := verify(t, again); !rep.OK || rep.Records != 8 {
		t.Errorf("VerifyAudit after a second keyed open = %+v, want the same 8 records", rep)
	}
	if _, err := again.AppendAudit(ctxT(t), sessions.NewAuditRecord{Type: "t"}); err != nil {
		t.Errorf("AppendAudit after re-keying: %v", err)
	}
	// The re-keyed chain is tamper-evident like any other.
	if err := tm.EditAuditPayload(ctxT(t), 2, `{"i":99}`); err != nil {
		t.Fatal(err)
	}
	wantBroken(t, "after editing a re-keyed record", verify(t, again), 2, "")
}

func testAuditRekeyBroken(t *testing.T, h *harness) {
	s, tm, _ := unkeyedLog(t, h, 5)
	if err := tm.EditAuditPayload(ctxT(t), 3, `{"i":42}`); err != nil {
		t.Fatal(err)
	}
	keyed := h.reopen(t, s, &sessions.Options{AuditKey: Key, AdoptUnkeyedLog: true})
	wantBroken(t, "of a broken unkeyed log", verify(t, keyed), 3, "not re-keyed")
	wantAppendRefused(t, keyed, "to a broken unkeyed log")
	if head := headRow(t, tm); head.KeyID != "" || head.LastID != 5 {
		t.Errorf("audit head after the refused re-key = %+v, want it untouched", head)
	}
}

func testAuditUnkeyedNotAdopted(t *testing.T, h *harness) {
	s, _, _ := unkeyedLog(t, h, 3)
	keyed := h.reopen(t, s, &sessions.Options{AuditKey: Key})
	wantBroken(t, "of an unkeyed log not adopted", verify(t, keyed), 0, "not keyed")
	wantAppendRefused(t, keyed, "to an unkeyed log not adopted")
}
