package auditchain

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/openprogram/openprogram/sessions"
)

// VerifyAudit implements [sessions.Store]: in one snapshot it walks the
// shared chain in id order and compares its end with the sealed head, then
// walks every writer chain and compares its end with the writer's signed
// head, checks each writer's key against its id and the pins, and checks
// the records each writer names at its start.
func (l Log) VerifyAudit(ctx context.Context, anchor *sessions.AuditHead) (sessions.AuditReport, error) {
	if l.key == nil && l.chain == nil {
		return sessions.AuditReport{}, fmt.Errorf("verify audit: %w", CheckAppend(nil, Head{}))
	}
	var rep sessions.AuditReport
	err := l.read(ctx, func(tx Tx) error {
		head, err := tx.Head(ctx, false)
		if err != nil {
			return err
		}
		keys, err := tx.Keys(ctx)
		if err != nil {
			return err
		}
		writers, err := tx.Writers(ctx)
		if err != nil {
			return err
		}
		sharedAnchor := anchor
		if anchor != nil {
			r, found, err := tx.Record(ctx, anchor.ID)
			if err != nil {
				return err
			}
			if found && r.Writer != "" {
				sharedAnchor = nil
			} else {
				anchor = nil
			}
		}
		need := map[int64]string{}
		for _, w := range writers {
			for _, id := range []int64{w.BaseID, w.AnchorID} {
				if id > 0 {
					need[id] = ""
				}
			}
		}
		var v *Verifier
		var notes []string
		if l.key != nil && (head.KeyID == "" || head.KeyID == KeyID(l.key) || l.chain == nil) {
			v = NewVerifier(l.key, head, sharedAnchor)
		} else {
			v = NewLinkVerifier(head, sharedAnchor)
			if head.ID > 0 {
				mine := "none"
				if l.key != nil {
					mine = KeyID(l.key)
				}
				notes = append(notes, fmt.Sprintf("the shared chain (records up to %d, written before writer keys) was checked for gaps, order and its end only: its MACs need the audit_key it was written with (key %s; this host's is %s)", head.ID, head.KeyID, mine))
			}
		}
		if err := tx.Scan(ctx, 0, func(r sessions.AuditRecord) bool {
			if _, ok := need[r.ID]; ok {
				need[r.ID] = r.Hash
			}
			return v.Add(r)
		}); err != nil {
			return err
		}
		rep = v.Finish()
		rep.Notes = notes
		if !rep.OK {
			return nil
		}
		wv := newWriterVerifier(keys, writers, l.pins, anchor, need, rep.Records)
		if !wv.done {
			if err := tx.ScanWriters(ctx, wv.add); err != nil {
				return err
			}
		}
		wrep := wv.finish()
		wrep.Notes = notes
		rep = wrep
		return nil
	})
	if err != nil {
		return sessions.AuditReport{}, fmt.Errorf("verify audit: %w", err)
	}
	return rep, nil
}

// keyState is a stored writer key as verification sees it.
type keyState struct {
	pub       ed25519.PublicKey
	key       sessions.AuditKey
	revokedBy int64 // the id of the record that revoked it, 0 when none
	lastID    int64 // the highest id of its writers' records
}

// writerVerifier walks the writer chains, ordered by writer and Seq.
type writerVerifier struct {
	keys    map[string]*keyState
	writers map[string]Writer
	seen    map[string]bool
	anchor  *sessions.AuditHead // a writer record, or nil
	found   bool
	need    map[int64]string

	cur    *Writer
	curKey *keyState
	seq    int64
	prev   string
	lastID int64

	n    int64
	rep  sessions.AuditReport
	done bool
}

func newWriterVerifier(keys []sessions.AuditKey, writers []Writer, pins map[string]ed25519.PublicKey,
	anchor *sessions.AuditHead, need map[int64]string, shared int64) *writerVerifier {
	v := &writerVerifier{keys: map[string]*keyState{}, writers: map[string]Writer{}, seen: map[string]bool{},
		anchor: anchor, need: need, n: shared}
	for _, k := range keys {
		pub, ok := DecodePublicKey(k.PublicKey)
		if !ok || WriterKeyID(pub) != k.ID {
			v.fail(0, fmt.Sprintf("the stored writer key %s (%s) is not the key its id names: the key row was edited", k.ID, k.Label))
			return v
		}
		if want, pinned := pins[k.ID]; pinned && !want.Equal(pub) {
			v.fail(0, fmt.Sprintf("the stored writer key %s (%s) is not the key pinned under its id", k.ID, k.Label))
			return v
		}
		k.Pinned = pins[k.ID] != nil
		k.Revoked = false // from the records, below
		v.keys[k.ID] = &keyState{pub: pub, key: k}
	}
	pinned := make([]string, 0, len(pins))
	for id := range pins {
		pinned = append(pinned, id)
	}
	sort.Strings(pinned)
	for _, id := range pinned {
		if v.keys[id] == nil {
			v.fail(0, fmt.Sprintf("the pinned writer key %s is not in the log any more: its key row, and with it what its writers wrote, was deleted", id))
			return v
		}
	}
	for _, w := range writers {
		if v.keys[w.KeyID] == nil {
			v.fail(0, fmt.Sprintf("writer %s names key %s, which the log does not hold", w.ID, w.KeyID))
			return v
		}
		v.writers[w.ID] = w
	}
	return v
}

func (v *writerVerifier) fail(id int64, problem string) bool {
	v.done = true
	v.rep = sessions.AuditReport{Records: v.n, FirstBadID: id, Problem: problem}
	return false
}

// name says which writer, and whose.
func (v *writerVerifier) name(w Writer) string {
	if k := v.keys[w.KeyID]; k != nil && k.key.Label != "" {
		return fmt.Sprintf("writer %s (key %s, %s)", w.ID, w.KeyID, k.key.Label)
	}
	return fmt.Sprintf("writer %s (key %s)", w.ID, w.KeyID)
}

func (v *writerVerifier) add(r sessions.AuditRecord) bool {
	if v.done {
		return false
	}
	if v.cur == nil || r.Writer != v.cur.ID {
		if v.cur != nil && !v.end() {
			return false
		}
		w, ok := v.writers[r.Writer]
		if !ok {
			return v.fail(r.ID, fmt.Sprintf("audit record %d belongs to writer %s, whose signed head is not in the log (deleted, or the record was inserted)", r.ID, r.Writer))
		}
		v.cur, v.curKey, v.seq, v.prev, v.lastID = &w, v.keys[w.KeyID], 0, WriterGenesis(w), 0
		v.seen[w.ID] = true
	}
	w := *v.cur
	switch {
	case r.Seq != v.seq+1:
		return v.fail(r.ID, fmt.Sprintf("record %d of %s is missing (next stored is its record %d, audit record %d)", v.seq+1, v.name(w), r.Seq, r.ID))
	case r.PrevHash != v.prev:
		return v.fail(r.ID, fmt.Sprintf("audit record %d (record %d of %s) does not follow its record %d (deleted, reordered or moved to another writer)", r.ID, r.Seq, v.name(w), r.Seq-1))
	case WriterRecordHash(r) != r.Hash:
		// The hashes chain up to the writer's head, whose signature end
		// checks: one signature per chain covers every record of it.
		return v.fail(r.ID, fmt.Sprintf("audit record %d (record %d of %s) does not match its hash (edited, inserted, or written without the key)", r.ID, r.Seq, v.name(w)))
	case v.anchor != nil && r.ID == v.anchor.ID && !hmac.Equal([]byte(r.Hash), []byte(v.anchor.MAC)):
		return v.fail(r.ID, fmt.Sprintf("audit record %d is not the anchored head %d:%s (the log was rewritten from there)", r.ID, v.anchor.ID, v.anchor.MAC))
	}
	if v.anchor != nil && r.ID == v.anchor.ID {
		v.found = true
	}
	if _, ok := v.need[r.ID]; ok {
		v.need[r.ID] = r.Hash
	}
	if r.Type == sessions.AuditKeyRevoked {
		var p struct {
			KeyID string `json:"key_id"`
		}
		if json.Unmarshal(r.Payload, &p) == nil {
			if k := v.keys[p.KeyID]; k != nil && (k.revokedBy == 0 || r.ID < k.revokedBy) {
				k.revokedBy = r.ID
			}
		}
	}
	v.curKey.lastID = max(v.curKey.lastID, r.ID)
	v.curKey.key.Records++
	v.seq, v.prev, v.lastID = r.Seq, r.Hash, r.ID
	v.n++
	return true
}

// end compares the writer walked last with its signed head.
func (v *writerVerifier) end() bool {
	w := *v.cur
	switch {
	case v.seq < w.Seq:
		return v.fail(v.lastID, fmt.Sprintf("%s of %s %s missing (its signed head is its record %d)", recordRange(v.seq+1, w.Seq), v.name(w), isAre(v.seq+1, w.Seq), w.Seq))
	case v.seq > w.Seq:
		return v.fail(v.lastID, fmt.Sprintf("record %d of %s is not covered by its head %d (inserted)", w.Seq+1, v.name(w), w.Seq))
	case v.prev != w.Hash:
		return v.fail(v.lastID, fmt.Sprintf("the last record of %s does not match its head", v.name(w)))
	case !Verify(v.curKey.pub, HeadMessage(w), w.Sig):
		return v.fail(v.lastID, fmt.Sprintf("the head of %s (its record %d) does not carry its key's signature: it was moved back (its newest records deleted) or forged", v.name(w), w.Seq))
	}
	return true
}

func (v *writerVerifier) finish() sessions.AuditReport {
	if v.done {
		return v.rep
	}
	if v.cur != nil && !v.end() {
		return v.rep
	}
	ids := make([]string, 0, len(v.writers))
	for id := range v.writers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		w := v.writers[id]
		if !v.seen[id] && w.Seq > 0 {
			v.fail(0, fmt.Sprintf("%s of %s %s missing (its signed head is its record %d)", recordRange(1, w.Seq), v.name(w), isAre(1, w.Seq), w.Seq))
			return v.rep
		}
		if w.BaseID > 0 && v.need[w.BaseID] != w.BaseHash {
			v.fail(w.BaseID, fmt.Sprintf("%s started after audit record %d:%s, which the log no longer holds (deleted or rewritten)", v.name(w), w.BaseID, w.BaseHash))
			return v.rep
		}
		if w.AnchorID > 0 && v.need[w.AnchorID] != w.AnchorHash {
			v.fail(w.AnchorID, fmt.Sprintf("%s started after its host had anchored audit record %d:%s, which the log no longer holds (a writer chain deleted whole, or rewritten)", v.name(w), w.AnchorID, w.AnchorHash))
			return v.rep
		}
	}
	if v.anchor != nil && !v.found {
		v.fail(v.anchor.ID, fmt.Sprintf("the log no longer extends the anchored head %d:%s (deleted)", v.anchor.ID, v.anchor.MAC))
		return v.rep
	}
	rep := sessions.AuditReport{Records: v.n, OK: true, Writers: int64(len(v.writers))}
	kids := make([]string, 0, len(v.keys))
	for id := range v.keys {
		kids = append(kids, id)
	}
	sort.Strings(kids)
	for _, id := range kids {
		k := v.keys[id]
		if k.revokedBy > 0 && k.lastID > k.revokedBy {
			return v.failRep(k.lastID, fmt.Sprintf("audit record %d was written with key %s (%s) after audit record %d revoked it", k.lastID, id, k.key.Label, k.revokedBy))
		}
		k.key.Revoked = k.revokedBy > 0
		rep.Keys = append(rep.Keys, k.key)
	}
	return rep
}

func (v *writerVerifier) failRep(id int64, problem string) sessions.AuditReport {
	v.fail(id, problem)
	return v.rep
}

// CheckAuditAnchor implements [sessions.Store]. With a writer chain of
// its own, the head it returns is that chain's last record (the anchor
// given, or none, before the first), never the shared chain's.
func (l Log) CheckAuditAnchor(ctx context.Context, anchor *sessions.AuditHead) (sessions.AuditHead, error) {
	var head Head
	err := l.read(ctx, func(tx Tx) error {
		var err error
		if head, err = tx.Head(ctx, false); err != nil {
			return err
		}
		var rec *sessions.AuditRecord
		if anchor != nil {
			r, found, err := tx.Record(ctx, anchor.ID)
			if err != nil {
				return err
			}
			if found {
				rec = &r
			}
		}
		if rec != nil && rec.Writer != "" {
			if err := checkWriterAnchor(ctx, tx, anchor, *rec); err != nil {
				return err
			}
		} else if err := checkSharedAnchor(l.key, head, anchor, rec); err != nil {
			return err
		}
		if l.chain != nil {
			return nil
		}
		return CheckAppend(l.key, head)
	})
	if err != nil {
		return sessions.AuditHead{}, fmt.Errorf("check the audit anchor: %w", err)
	}
	if l.chain != nil {
		if own, ok := l.chain.head(); ok {
			return own, nil
		}
		if anchor != nil {
			return *anchor, nil
		}
		return sessions.AuditHead{}, nil
	}
	return sessions.AuditHead{ID: head.ID, MAC: head.Hash}, nil
}

// checkWriterAnchor says whether rec, the stored record with the anchor's
// id, is the anchored record of a writer chain that still holds it: its
// MAC, its key's signature, and a signed head at or past it.
func checkWriterAnchor(ctx context.Context, tx Tx, anchor *sessions.AuditHead, rec sessions.AuditRecord) error {
	const fix = "it was emptied, replaced by another log or cut back"
	if !hmac.Equal([]byte(rec.Hash), []byte(anchor.MAC)) {
		return fmt.Errorf("%w: audit record %d is not the anchored record %d:%s: %s", sessions.ErrAuditAnchor, rec.ID, anchor.ID, anchor.MAC, fix)
	}
	writers, err := tx.Writers(ctx)
	if err != nil {
		return err
	}
	keys, err := tx.Keys(ctx)
	if err != nil {
		return err
	}
	var w *Writer
	for i := range writers {
		if writers[i].ID == rec.Writer {
			w = &writers[i]
		}
	}
	var pub ed25519.PublicKey
	for _, k := range keys {
		if p, ok := DecodePublicKey(k.PublicKey); ok && w != nil && k.ID == w.KeyID && WriterKeyID(p) == k.ID {
			pub = p
		}
	}
	switch {
	case w == nil || pub == nil:
		return fmt.Errorf("%w: the writer of the anchored record %d, or its key, is not in the log: %s", sessions.ErrAuditAnchor, anchor.ID, fix)
	case !CheckWriterRecord(pub, rec):
		return fmt.Errorf("%w: audit record %d carries the anchored hash but not its key's signature (forged)", sessions.ErrAuditAnchor, rec.ID)
	case w.Seq < rec.Seq || !Verify(pub, HeadMessage(*w), w.Sig):
		return fmt.Errorf("%w: the head of writer %s is not at or past the anchored record %d with its key's signature: %s", sessions.ErrAuditAnchor, w.ID, anchor.ID, fix)
	}
	return nil
}

// AuditKeys implements [sessions.Store].
func (l Log) AuditKeys(ctx context.Context) ([]sessions.AuditKey, error) {
	var keys []sessions.AuditKey
	err := l.read(ctx, func(tx Tx) error {
		var err error
		keys, err = tx.Keys(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list audit keys: %w", err)
	}
	for i := range keys {
		keys[i].Pinned = l.pins[keys[i].ID] != nil
	}
	return keys, nil
}

// RevokeAuditKey implements [sessions.Store]: the audit.key.revoked record
// first, in this store's writer chain, then the key's revoked mark, which
// refuses its writers' appends.
func (l Log) RevokeAuditKey(ctx context.Context, id string) (sessions.AuditRecord, error) {
	if l.chain == nil {
		return sessions.AuditRecord{}, fmt.Errorf("revoke audit key: %w: the store was opened without a signing key", sessions.ErrAuditKey)
	}
	keys, err := l.AuditKeys(ctx)
	if err != nil {
		return sessions.AuditRecord{}, err
	}
	var known *sessions.AuditKey
	for i := range keys {
		if keys[i].ID == id {
			known = &keys[i]
		}
	}
	if known == nil {
		return sessions.AuditRecord{}, fmt.Errorf("revoke audit key %s: %w", id, sessions.ErrNotFound)
	}
	payload, err := json.Marshal(map[string]string{"key_id": id, "label": known.Label})
	if err != nil {
		return sessions.AuditRecord{}, err
	}
	rec, err := l.AppendAudit(ctx, sessions.NewAuditRecord{Type: sessions.AuditKeyRevoked, Origin: "cli", Payload: payload})
	if err != nil {
		return sessions.AuditRecord{}, fmt.Errorf("revoke audit key %s: %w", id, err)
	}
	if _, err := l.chain.ws.Revoke(ctx, id); err != nil {
		return rec, fmt.Errorf("revoke audit key %s: the audit.key.revoked record is written, marking the key failed: %w", id, err)
	}
	return rec, nil
}

// SwitchTx is migration 0006's audit record, within its transaction tx: a
// shared chain keyed with this log's key and sealed gets its last record,
// audit.writers {shared_records}, after which writers with keys of their
// own take over. Any other shared chain is left as it is.
func (l Log) SwitchTx(ctx context.Context, tx Tx) error {
	head, err := tx.Head(ctx, true)
	if err != nil {
		return err
	}
	if l.key == nil || head.ID == 0 || CheckAppend(l.key, head) != nil {
		return nil
	}
	payload, err := json.Marshal(map[string]int64{"shared_records": head.ID})
	if err != nil {
		return err
	}
	_, err = l.appendAfter(ctx, tx, head, sessions.NewAuditRecord{Type: sessions.AuditWriters, Origin: "sessions"}, payload)
	return err
}

// recordRange names the records from to to of a writer.
func recordRange(from, to int64) string {
	if from == to {
		return fmt.Sprintf("record %d", from)
	}
	return fmt.Sprintf("records %d to %d", from, to)
}

func isAre(from, to int64) string {
	if from == to {
		return "is"
	}
	return "are"
}
