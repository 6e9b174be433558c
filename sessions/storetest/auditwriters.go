package storetest

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/auditchain"
)

var writerTests = []test{
	{"AppendVerify", testWriterAppendVerify},
	{"TwoHostsConcurrent", testWriterTwoHosts},
	{"TamperEdit", testWriterTamperEdit},
	{"TamperDelete", testWriterTamperDelete},
	{"TamperSwap", testWriterTamperSwap},
	{"OtherHostsTailDeleted", testWriterTailDeleted},
	{"OtherHostsTailDeletedHeadReplayed", testWriterTailReplayed},
	{"OtherHostsTailDeletedHeadForged", testWriterHeadForged},
	{"WholeChainDeleted", testWriterWholeChainDeleted},
	{"KeyReplaced", testWriterKeyReplaced},
	{"PinnedKeyDeleted", testWriterPinnedKeyDeleted},
	{"Revoke", testWriterRevoke},
	{"AnchorRollback", testWriterAnchorRollback},
}

// signed opens a fresh store keyed with Key whose appends go to a writer
// chain signed by host i's key.
func (h *harness) signed(t *testing.T, i byte) sessions.Store {
	t.Helper()
	return h.storeWith(t, &sessions.Options{AuditKey: Key, AuditSigner: SigningKey(i), AuditSignerLabel: fmt.Sprintf("host-%d", i)})
}

// host opens another handle on s's database as host i (its own key, and
// the shared audit key only when shared is true), pinning pins.
func (h *harness) host(t *testing.T, s sessions.Store, i byte, anchor *sessions.AuditHead, pins ...byte) sessions.Store {
	t.Helper()
	p := map[string]ed25519.PublicKey{}
	for _, j := range pins {
		pub := SigningKey(j).Public().(ed25519.PublicKey)
		p[auditchain.WriterKeyID(pub)] = pub
	}
	return h.reopen(t, s, &sessions.Options{AuditSigner: SigningKey(i), AuditSignerLabel: fmt.Sprintf("host-%d", i), AuditAnchor: anchor, AuditPins: p})
}

func writerTamperer(t *testing.T, h *harness, s sessions.Store) (Tamperer, WriterTamperer) {
	t.Helper()
	tm := h.tamperer(t, s)
	wt, ok := tm.(WriterTamperer)
	if !ok {
		t.Fatal("storetest: the writer-chain tests need a Tamperer that is a WriterTamperer too")
	}
	return tm, wt
}

func keyID(i byte) string {
	return auditchain.WriterKeyID(SigningKey(i).Public().(ed25519.PublicKey))
}

func testWriterAppendVerify(t *testing.T, h *harness) {
	s := h.signed(t, 0)
	recs := appendAudit(t, s, 5)
	all, err := s.TailAudit(ctxT(t), 10)
	noErr(t, err, "TailAudit")
	if len(all) != 7 || all[0].Type != auditchain.RekeyType || all[1].Type != sessions.AuditKeyAdded {
		t.Fatalf("log = %d records (%v...), want the shared key record, audit.key.added and 5 more", len(all), all[0].Type)
	}
	for i, r := range all[1:] {
		if r.Writer == "" || r.Writer != all[1].Writer || r.Seq != int64(i+1) || r.Sig == "" || r.ID <= all[i].ID {
			t.Errorf("record %d = writer %q seq %d sig %q, want writer %q seq %d, signed, after id %d", r.ID, r.Writer, r.Seq, r.Sig, all[1].Writer, i+1, all[i].ID)
		}
	}
	if recs[4].ID != all[6].ID || recs[4].Hash != all[6].Hash {
		t.Errorf("AppendAudit returned %d:%s, stored %d:%s", recs[4].ID, recs[4].Hash, all[6].ID, all[6].Hash)
	}
	rep := verify(t, s)
	if !rep.OK || rep.Records != 7 || rep.Writers != 1 || len(rep.Keys) != 1 || rep.Keys[0].ID != keyID(0) || rep.Keys[0].Pinned || rep.Keys[0].Records != 6 {
		t.Errorf("VerifyAudit = %+v, want 7 intact records, 1 writer, key %s (not pinned) with 6 records", rep, keyID(0))
	}
	if got, err := s.CheckAuditAnchor(ctxT(t), nil); err != nil || got.ID != recs[4].ID || got.MAC != recs[4].Hash {
		t.Errorf("CheckAuditAnchor(nil) = %+v, %v; want this writer's head %d", got, err, recs[4].ID)
	}
	keys, err := s.AuditKeys(ctxT(t))
	if err != nil || len(keys) != 1 || keys[0].Label != "host-0" || keys[0].Revoked {
		t.Errorf("AuditKeys = %+v, %v; want host-0's key", keys, err)
	}
}

// testWriterTwoHosts: two hosts (own keys, no shared secret: the second
// has no audit key) append concurrently from two handles each; every
// handle's chain is gapless, and each host verifies the whole log.
func testWriterTwoHosts(t *testing.T, h *harness) {
	a := h.signed(t, 0)
	b := h.host(t, a, 1, nil)
	a2 := h.reopen(t, a, &sessions.Options{AuditKey: Key, AuditSigner: SigningKey(0)})
	appendAuditConcurrently(t, 12, a, b, a2, b)
	for name, s := range map[string]sessions.Store{"host 0": a, "host 1 (no audit key)": b} {
		rep := verify(t, s)
		t.Logf("audit verify on %s: %s %+v", name, reportLine(rep), rep.Notes)
		// 1 shared + 2 key records + 48
		if !rep.OK || rep.Records != 51 || rep.Writers != 3 || len(rep.Keys) != 2 {
			t.Errorf("VerifyAudit on %s = %+v, want 51 intact records of 3 writers and 2 keys", name, rep)
		}
	}
}

// writerLog returns host 1's handle on a log where host 0 appended n
// records (its writer's records: audit.key.added, then n), host 0's
// records and a writer tamperer.
func writerLog(t *testing.T, h *harness, n int) (sessions.Store, []sessions.AuditRecord, Tamperer, WriterTamperer) {
	t.Helper()
	a := h.signed(t, 0)
	recs := appendAudit(t, a, n)
	b := h.host(t, a, 1, nil, 0)
	appendAudit(t, b, 2)
	if rep := verify(t, b); !rep.OK {
		t.Fatalf("VerifyAudit before tampering = %+v", rep)
	}
	tm, wt := writerTamperer(t, h, a)
	return b, recs, tm, wt
}

func testWriterTamperEdit(t *testing.T, h *harness) {
	b, recs, tm, _ := writerLog(t, h, 4)
	noErr(t, tm.EditAuditPayload(ctxT(t), recs[1].ID, `{"request_id":9}`), "edit")
	wantBroken(t, "after editing host 0's record", verify(t, b), recs[1].ID, "does not match its hash")
}

func testWriterTamperDelete(t *testing.T, h *harness) {
	b, recs, tm, _ := writerLog(t, h, 4)
	noErr(t, tm.DeleteAudit(ctxT(t), recs[1].ID), "delete")
	wantBroken(t, "after deleting a record of host 0", verify(t, b), recs[2].ID, "is missing")
}

func testWriterTamperSwap(t *testing.T, h *harness) {
	b, recs, tm, _ := writerLog(t, h, 4)
	noErr(t, tm.SwapAudit(ctxT(t), recs[1].ID, recs[2].ID), "swap")
	wantBroken(t, "after swapping two records of host 0", verify(t, b), 0, "")
}

// testWriterTailDeleted: host 1's database writer deletes host 0's
// newest records; host 1's verify names host 0's writer.
func testWriterTailDeleted(t *testing.T, h *harness) {
	b, recs, tm, _ := writerLog(t, h, 4)
	for _, r := range recs[2:] {
		noErr(t, tm.DeleteAudit(ctxT(t), r.ID), "delete")
	}
	rep := verify(t, b)
	wantBroken(t, "after deleting host 0's tail", rep, recs[1].ID, "records 4 to 5 of writer "+recs[0].Writer)
	if !strings.Contains(rep.Problem, "host-0") {
		t.Errorf("problem %q does not name host-0", rep.Problem)
	}
}

// testWriterTailReplayed: the tail deleted and host 0's head put back to
// an older signed head (saved earlier): caught by the anchor only.
func testWriterTailReplayed(t *testing.T, h *harness) {
	a := h.signed(t, 0)
	first := appendAudit(t, a, 2)
	tm, wt := writerTamperer(t, h, a)
	old := writerRow(t, wt, first[0].Writer)
	more := appendAudit(t, a, 3)
	anchor := &sessions.AuditHead{ID: more[2].ID, MAC: more[2].Hash}
	for _, r := range more {
		noErr(t, tm.DeleteAudit(ctxT(t), r.ID), "delete")
	}
	noErr(t, wt.SetAuditWriter(ctxT(t), old), "replay the head")
	if rep := verify(t, a); !rep.OK {
		t.Logf("VerifyAudit without an anchor after a replayed head: %s", reportLine(rep))
	}
	wantBroken(t, "against the anchor after a replayed head", verifyAnchored(t, a, anchor), 0, "no longer extends the anchored head")
	if _, err := a.CheckAuditAnchor(ctxT(t), anchor); !errors.Is(err, sessions.ErrAuditAnchor) {
		t.Errorf("CheckAuditAnchor after a replayed head = %v, want ErrAuditAnchor", err)
	}
}

func testWriterHeadForged(t *testing.T, h *harness) {
	b, recs, tm, wt := writerLog(t, h, 4)
	w := writerRow(t, wt, recs[0].Writer)
	for _, r := range recs[2:] {
		noErr(t, tm.DeleteAudit(ctxT(t), r.ID), "delete")
	}
	w.Seq, w.Hash = recs[1].Seq, recs[1].Hash
	noErr(t, wt.SetAuditWriter(ctxT(t), w), "move the head back")
	wantBroken(t, "after host 0's head was moved back", verify(t, b), recs[1].ID, "does not carry its key's signature")
}

// testWriterWholeChainDeleted: a host's earlier writer chain deleted
// whole (records and head): the host's next writer started after its
// anchor on that chain, and verify names the missing record.
func testWriterWholeChainDeleted(t *testing.T, h *harness) {
	a := h.signed(t, 0)
	recs := appendAudit(t, a, 3)
	anchor := &sessions.AuditHead{ID: recs[2].ID, MAC: recs[2].Hash}
	a2 := h.host(t, a, 0, anchor)
	appendAudit(t, a2, 2)
	noErr(t, a.Close(), "close")
	tm, wt := writerTamperer(t, h, a2)
	for _, r := range recs {
		noErr(t, tm.DeleteAudit(ctxT(t), r.ID), "delete")
	}
	noErr(t, tm.DeleteAudit(ctxT(t), recs[0].ID-1), "delete audit.key.added")
	noErr(t, wt.DeleteAuditWriter(ctxT(t), recs[0].Writer), "delete the writer")
	wantBroken(t, "after host 0's first writer was deleted whole", verify(t, a2), anchor.ID, "which the log no longer holds")
}

func testWriterKeyReplaced(t *testing.T, h *harness) {
	b, _, _, wt := writerLog(t, h, 2)
	other := SigningKey(7).Public().(ed25519.PublicKey)
	noErr(t, wt.SetAuditKeyRow(ctxT(t), sessions.AuditKey{ID: keyID(0), PublicKey: auditchain.EncodePublicKey(other)}), "replace the key")
	wantBroken(t, "after host 0's public key was replaced", verify(t, b), 0, "is not the key its id names")
}

func testWriterPinnedKeyDeleted(t *testing.T, h *harness) {
	b, recs, tm, wt := writerLog(t, h, 2)
	for _, r := range recs {
		noErr(t, tm.DeleteAudit(ctxT(t), r.ID), "delete")
	}
	noErr(t, tm.DeleteAudit(ctxT(t), recs[0].ID-1), "delete audit.key.added")
	noErr(t, wt.DeleteAuditWriter(ctxT(t), recs[0].Writer), "delete the writer")
	noErr(t, wt.DeleteAuditKeyRow(ctxT(t), keyID(0)), "delete the key")
	wantBroken(t, "after host 0 was deleted whole (key pinned)", verify(t, b), 0, "pinned writer key "+keyID(0))
}

// testWriterRevoke: host 1 revokes host 0's key: host 0's appends are
// refused at once, verify shows the key revoked, and a record host 0
// appends after the revocation (its mark cleared by a database writer) is
// named.
func testWriterRevoke(t *testing.T, h *harness) {
	b, _, _, wt := writerLog(t, h, 2)
	a := h.host(t, b, 0, nil)
	if _, err := b.RevokeAuditKey(ctxT(t), "0123"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("RevokeAuditKey(unknown) = %v, want ErrNotFound", err)
	}
	rec, err := b.RevokeAuditKey(ctxT(t), keyID(0))
	noErr(t, err, "RevokeAuditKey")
	if rec.Type != sessions.AuditKeyRevoked {
		t.Errorf("RevokeAuditKey record = %+v, want %s", rec, sessions.AuditKeyRevoked)
	}
	wantAppendRefused(t, a, "with a revoked key")
	rep := verify(t, b)
	if !rep.OK || len(rep.Keys) != 2 || !rep.Keys[slicesIndex(rep.Keys, keyID(0))].Revoked {
		t.Errorf("VerifyAudit after the revocation = %+v, want intact with key %s revoked", rep, keyID(0))
	}
	noErr(t, wt.SetAuditKeyRow(ctxT(t), sessions.AuditKey{ID: keyID(0), PublicKey: auditchain.EncodePublicKey(SigningKey(0).Public().(ed25519.PublicKey))}), "clear the mark")
	late := h.host(t, b, 0, nil)
	_, err = late.AppendAudit(ctxT(t), sessions.NewAuditRecord{Type: "t"})
	noErr(t, err, "append after the mark was cleared")
	wantBroken(t, "after a revoked key appended", verify(t, b), 0, "after audit record")
}

func slicesIndex(keys []sessions.AuditKey, id string) int {
	for i, k := range keys {
		if k.ID == id {
			return i
		}
	}
	return 0
}

// testWriterAnchorRollback: CheckAuditAnchor on a writer record: the log
// cut back behind it, or the anchor naming another hash, is refused.
func testWriterAnchorRollback(t *testing.T, h *harness) {
	a := h.signed(t, 0)
	recs := appendAudit(t, a, 4)
	anchor := sessions.AuditHead{ID: recs[3].ID, MAC: recs[3].Hash}
	if got, err := a.CheckAuditAnchor(ctxT(t), &anchor); err != nil || got != anchor {
		t.Fatalf("CheckAuditAnchor(head) = %+v, %v; want %+v", got, err, anchor)
	}
	if _, err := a.CheckAuditAnchor(ctxT(t), &sessions.AuditHead{ID: anchor.ID, MAC: recs[2].Hash}); !errors.Is(err, sessions.ErrAuditAnchor) {
		t.Errorf("CheckAuditAnchor(another hash) = %v, want ErrAuditAnchor", err)
	}
	tm, _ := writerTamperer(t, h, a)
	noErr(t, tm.DeleteAudit(ctxT(t), recs[3].ID), "delete")
	if _, err := a.CheckAuditAnchor(ctxT(t), &anchor); !errors.Is(err, sessions.ErrAuditAnchor) {
		t.Errorf("CheckAuditAnchor after the anchored record was deleted = %v, want ErrAuditAnchor", err)
	}
	wantBroken(t, "against the anchor after its record was deleted", verifyAnchored(t, a, &anchor), 0, "")
}

func writerRow(t *testing.T, wt WriterTamperer, id string) auditchain.Writer {
	t.Helper()
	ws, err := wt.AuditWriters(ctxT(t))
	noErr(t, err, "read the writers")
	for _, w := range ws {
		if w.ID == id {
			return w
		}
	}
	t.Fatalf("writer %s not stored", id)
	return auditchain.Writer{}
}

// CheckUpgradedAuditWriters checks a store migrated to writer chains from
// a keyed log with records (opened with Key and SigningKey(0)): its last
// record is the shared chain's audit.writers; then it and other (host 1,
// without the audit key) append, and both verify the whole log.
func CheckUpgradedAuditWriters(t *testing.T, up, other sessions.Store) {
	t.Helper()
	recs, err := up.TailAudit(ctxT(t), 10)
	noErr(t, err, "TailAudit")
	last := recs[len(recs)-1]
	if last.Type != sessions.AuditWriters || last.Writer != "" || string(last.Payload) != fmt.Sprintf(`{"shared_records":%d}`, last.ID-1) {
		t.Errorf("last record after the upgrade = %+v, want the shared chain's audit.writers record", last)
	}
	for _, st := range []sessions.Store{up, other} {
		_, err := st.AppendAudit(ctxT(t), sessions.NewAuditRecord{Type: "t", Origin: "o"})
		noErr(t, err, "AppendAudit after the upgrade")
	}
	for _, st := range []sessions.Store{up, other} {
		rep := verify(t, st)
		if !rep.OK || rep.Writers != 2 || rep.Records != last.ID+4 {
			t.Errorf("VerifyAudit after the upgrade and two writers' appends = %+v; want %d intact records, 2 writers", rep, last.ID+4)
		}
	}
}
