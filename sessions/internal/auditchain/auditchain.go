// Package auditchain holds the audit chain shared by every backend: the
// canonical payload form, the record MAC (HMAC-SHA-256 under a key that
// lives outside the store), the MAC over the chain head, and the chain
// verifier, so a chain written by one backend verifies the same way in
// another; and Log, the append, keying, verification and anchor check
// every backend runs over its own SQL (Tx). The unkeyed SHA-256 chain of the first version is kept only to
// check a log before it is re-keyed.
package auditchain

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"time"

	"github.com/openprogram/openprogram/internal/canonjson"
	"github.com/openprogram/openprogram/sessions"
)

// Genesis is the previous hash of the first record.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// CanonicalPayload returns raw in the one canonical JSON form
// (internal/canonjson: compact, object keys sorted at every depth, numbers
// kept verbatim), so a backend that normalises JSON hashes the same bytes
// it hands back. An empty payload becomes {}. A record's MAC covers the
// payload bytes as stored, so records written before this form (which
// escaped U+2028 and U+2029) keep verifying.
func CanonicalPayload(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}"), nil
	}
	out, err := canonjson.Canonicalize(raw)
	if err != nil {
		return nil, fmt.Errorf("audit payload is not valid JSON: %w", err)
	}
	return json.RawMessage(out), nil
}

// KeySize is the least audit key length accepted, in bytes.
const KeySize = 32

// RekeyType is the type of the audit record that starts a keyed chain: on a
// new log it is record 1, on a re-keyed log the record after the old ones.
const RekeyType = sessions.AuditKeyed

// RekeyPayload is the payload of the [RekeyType] record.
type RekeyPayload struct {
	// Rekeyed is how many records of an unkeyed log were re-keyed.
	Rekeyed int64 `json:"rekeyed"`
	// UnkeyedHead is the unkeyed chain's last hash before re-keying, or ""
	// on a new log.
	UnkeyedHead string `json:"unkeyed_head,omitempty"`
}

// CheckKey refuses a key too short to key the chain.
func CheckKey(key []byte) error {
	if len(key) < KeySize {
		return fmt.Errorf("audit key is %d bytes, want at least %d", len(key), KeySize)
	}
	return nil
}

// Head is the stored chain head: the last record's id and MAC, the id of
// the key that keyed the chain ("" for an unkeyed log) and the MAC over
// those three.
type Head struct {
	ID    int64
	Hash  string
	KeyID string
	MAC   string
}

// fields writes each field length-prefixed, so no two field lists share
// an encoding.
func fields(h hash.Hash, fs ...[]byte) string {
	for _, b := range fs {
		h.Write(strconv.AppendInt(nil, int64(len(b)), 10))
		h.Write([]byte{':'})
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func recordFields(h hash.Hash, prev string, id int64, ts time.Time, typ, origin, sessionID string, payload []byte) string {
	return fields(h, []byte(prev), strconv.AppendInt(nil, id, 10), strconv.AppendInt(nil, ts.UnixMicro(), 10),
		[]byte(typ), []byte(origin), []byte(sessionID), payload)
}

// Hash returns the unkeyed hash of the first version: hex(SHA-256(prevHash,
// id, ts in Unix microseconds, type, origin, session id, payload)), each
// field length-prefixed. Only the re-key check uses it.
func Hash(prevHash string, id int64, ts time.Time, typ, origin, sessionID string, payload []byte) string {
	return recordFields(sha256.New(), prevHash, id, ts, typ, origin, sessionID, payload)
}

// MAC returns hex(HMAC-SHA-256(key, ...)) over the fields [Hash] covers,
// encoded the same way.
func MAC(key []byte, prevMAC string, id int64, ts time.Time, typ, origin, sessionID string, payload []byte) string {
	return recordFields(hmac.New(sha256.New, key), prevMAC, id, ts, typ, origin, sessionID, payload)
}

// RecordMAC is MAC over r's own fields.
func RecordMAC(key []byte, r sessions.AuditRecord) string {
	return MAC(key, r.PrevHash, r.ID, r.TS, r.Type, r.Origin, r.SessionID, r.Payload)
}

// RecordHash is Hash over r's own fields.
func RecordHash(r sessions.AuditRecord) string {
	return Hash(r.PrevHash, r.ID, r.TS, r.Type, r.Origin, r.SessionID, r.Payload)
}

// KeyID names key without revealing it: 16 hex digits of an HMAC under it.
// The store keeps it so that a wrong key is told apart from tampering.
func KeyID(key []byte) string {
	return fields(hmac.New(sha256.New, key), []byte("openprogram audit key id"))[:16]
}

// HeadMAC seals a head under key, so moving the head back (after deleting
// the newest records) needs the key. The first field never has the length
// of a record's first field, so a head never encodes like a record.
func HeadMAC(key []byte, h Head) string {
	return fields(hmac.New(sha256.New, key), []byte("openprogram audit head"),
		strconv.AppendInt(nil, h.ID, 10), []byte(h.Hash), []byte(h.KeyID))
}

// Seal returns the head after r under key.
func Seal(key []byte, r sessions.AuditRecord) Head {
	h := Head{ID: r.ID, Hash: r.Hash, KeyID: KeyID(key)}
	h.MAC = HeadMAC(key, h)
	return h
}

// Next returns the record with id that follows head with the fields of
// in, the time ts and its MAC under key. The id is above head's; other
// writers' records may sit between them.
func Next(key []byte, head Head, id int64, ts time.Time, in sessions.NewAuditRecord, payload json.RawMessage) sessions.AuditRecord {
	prev := head.Hash
	if prev == "" {
		prev = Genesis
	}
	r := sessions.AuditRecord{ID: id, TS: ts, Type: in.Type, Origin: in.Origin,
		SessionID: in.SessionID, Payload: payload, PrevHash: prev}
	r.Hash = RecordMAC(key, r)
	return r
}

// Errors of [CheckAppend].
var (
	errUnkeyed  = errors.New("the audit log is not keyed yet (it was written before keyed audit, and its unkeyed chain did not pass the check that re-keying needs, or the store was opened without permission to adopt it); run `openprogram audit verify` to see why")
	errWrongKey = errors.New("the audit key does not match the key this audit log was written with; use the key file of the host that created the log")
)

// CheckAppend says whether a record may be appended after head with key:
// never without a key, to an unkeyed log, or with another key than the
// chain's (errors wrapping [sessions.ErrAuditKey]), and never after a head
// whose seal does not verify ([sessions.ErrAuditBroken]): sealing it anew
// would launder a head moved back over deleted records.
func CheckAppend(key []byte, head Head) error {
	switch {
	case key == nil:
		return fmt.Errorf("%w: the store was opened without an audit key", sessions.ErrAuditKey)
	case head.KeyID == "":
		return fmt.Errorf("%w: %w", sessions.ErrAuditKey, errUnkeyed)
	case head.KeyID != KeyID(key):
		return fmt.Errorf("%w: %w", sessions.ErrAuditKey, errWrongKey)
	case !hmac.Equal([]byte(HeadMAC(key, head)), []byte(head.MAC)):
		return fmt.Errorf("%w: the chain head (record %d) does not carry its seal, so records after it were deleted or the head was forged; keep a copy of the database for investigation and run `openprogram audit verify`", sessions.ErrAuditBroken, head.ID)
	}
	return nil
}

// CheckAnchor says whether the log whose stored head is head still holds
// anchor (when not nil), rec being the stored record with the anchor's id
// (nil when there is none), and whether a record may follow head (see
// [CheckAppend]). A log that does not extend the anchor is an error
// wrapping [sessions.ErrAuditAnchor], checked first and whatever the
// head's columns say: no edit of the head (its key id, its id) skips the
// comparison, and with a key the anchored record's MAC is recomputed. Only
// then does a missing or other key wrap [sessions.ErrAuditKey].
func CheckAnchor(key []byte, head Head, anchor *sessions.AuditHead, rec *sessions.AuditRecord) error {
	if err := checkSharedAnchor(key, head, anchor, rec); err != nil {
		return err
	}
	return CheckAppend(key, head)
}

// checkSharedAnchor is CheckAnchor's comparison with the anchor.
func checkSharedAnchor(key []byte, head Head, anchor *sessions.AuditHead, rec *sessions.AuditRecord) error {
	if anchor != nil {
		const fix = "it was emptied, replaced by another log or cut back"
		switch {
		case rec == nil || head.ID < anchor.ID:
			return fmt.Errorf("%w: the log ends at record %d and does not hold the anchored record %d: %s", sessions.ErrAuditAnchor, head.ID, anchor.ID, fix)
		case !hmac.Equal([]byte(rec.Hash), []byte(anchor.MAC)):
			return fmt.Errorf("%w: audit record %d is not the anchored record %d:%s: %s", sessions.ErrAuditAnchor, rec.ID, anchor.ID, anchor.MAC, fix)
		case key != nil && !hmac.Equal([]byte(RecordMAC(key, *rec)), []byte(rec.Hash)):
			// This host anchored the record after verifying it under its
			// key: either it was forged since, or the key file changed.
			return fmt.Errorf("%w: audit record %d carries the anchored MAC but does not match it under this host's key (forged, or the key file was replaced)", sessions.ErrAuditAnchor, rec.ID)
		}
	}
	return nil
}

// Verifier walks a chain in id order. Feed every record to Add, then call
// Finish.
type Verifier struct {
	key      []byte // nil: the unkeyed chain of the first version
	head     Head
	anchor   *sessions.AuditHead
	unkeyed  bool // a keyed check of a log that was never keyed
	wrongKey bool // the head names another key
	linkOnly bool // no key to check MACs with: links and the end only

	n    int64
	prev string
	rep  sessions.AuditReport
	done bool
}

// NewVerifier returns a verifier of the chain that ends at head. With a key
// it checks MACs and the head's seal, and, when anchor is not nil, that the
// chain still holds the anchored record; with a nil key it checks the
// unkeyed SHA-256 chain (the check before re-keying).
func NewVerifier(key []byte, head Head, anchor *sessions.AuditHead) *Verifier {
	v := &Verifier{key: key, head: head, anchor: anchor, prev: Genesis}
	if key != nil {
		v.unkeyed = head.KeyID == ""
		v.wrongKey = !v.unkeyed && head.KeyID != KeyID(key)
		if v.unkeyed {
			v.key = nil // report what the unkeyed chain looks like
		}
	}
	return v
}

// NewLinkVerifier returns a verifier of the keyed chain that ends at head
// for a reader without its key (a host that joined with a signing key of
// its own): it checks that ids and previous MACs link up to the head and
// that the chain holds anchor, not the MACs or the head's seal.
func NewLinkVerifier(head Head, anchor *sessions.AuditHead) *Verifier {
	return &Verifier{head: head, anchor: anchor, prev: Genesis, linkOnly: true}
}

// Add checks the next record. It returns false once the chain is broken;
// later records need not be fed.
func (v *Verifier) Add(r sessions.AuditRecord) bool {
	if v.done {
		return false
	}
	want := v.n + 1
	if r.ID > want && r.PrevHash == v.prev {
		// Records of writer chains took the ids between: the shared
		// chain links over them.
		want = r.ID
	}
	var ok bool
	switch {
	case v.linkOnly:
		ok = true
	case v.key != nil:
		ok = hmac.Equal([]byte(RecordMAC(v.key, r)), []byte(r.Hash))
	default:
		ok = RecordHash(r) == r.Hash
	}
	switch {
	case v.wrongKey && r.ID == 1 && r.PrevHash == Genesis && !ok:
		return v.fail(1, fmt.Sprintf("the audit key does not match the key this log names (the log names key %s, the key file is key %s): either the key file is not the one this log was written with (use the key file of the host that created the log), or the chain was recomputed without the key", v.head.KeyID, KeyID(v.key)))
	case r.ID != want:
		return v.fail(want, fmt.Sprintf("audit record %d is missing (next stored record is %d)", want, r.ID))
	case r.PrevHash != v.prev:
		return v.fail(r.ID, fmt.Sprintf("audit record %d does not follow record %d (prev_hash mismatch: deleted or reordered)", r.ID, r.ID-1))
	case !ok && v.key != nil:
		return v.fail(r.ID, fmt.Sprintf("audit record %d does not match its MAC (edited, inserted, or written without the key)", r.ID))
	case !ok:
		return v.fail(r.ID, fmt.Sprintf("audit record %d does not match its hash (edited)", r.ID))
	case v.anchor != nil && r.ID == v.anchor.ID && !hmac.Equal([]byte(r.Hash), []byte(v.anchor.MAC)):
		return v.fail(r.ID, fmt.Sprintf("audit record %d is not the anchored head %d:%s (the log was rewritten from there)", r.ID, v.anchor.ID, v.anchor.MAC))
	}
	v.n = r.ID
	v.prev = r.Hash
	return true
}

func (v *Verifier) fail(id int64, problem string) bool {
	v.done = true
	if v.unkeyed {
		problem = "the unkeyed audit log (written before keyed audit) is broken, so it was not re-keyed: " + problem
	}
	v.rep = sessions.AuditReport{Records: v.n, FirstBadID: id, Problem: problem}
	return false
}

// Finish compares the walked chain with the head and returns the report.
// Records counts the records verified before any problem.
func (v *Verifier) Finish() sessions.AuditReport {
	if v.done {
		return v.rep
	}
	headHash := v.head.Hash
	if headHash == "" {
		headHash = Genesis
	}
	switch {
	case v.head.ID > v.n:
		v.fail(v.n+1, fmt.Sprintf("audit records %d to %d are missing (chain head is %d)", v.n+1, v.head.ID, v.head.ID))
	case v.head.ID < v.n:
		v.fail(v.head.ID+1, fmt.Sprintf("audit record %d is not covered by the chain head %d (inserted)", v.head.ID+1, v.head.ID))
	case headHash != v.prev:
		v.fail(v.n, fmt.Sprintf("audit record %d does not match the chain head hash", v.n))
	case v.unkeyed:
		v.done = true
		v.rep = sessions.AuditReport{Records: v.n, FirstBadID: 1, Problem: fmt.Sprintf(
			"the audit log is not keyed: its %d records form an unkeyed chain, which anyone with write access to the database can recompute; a log written before keyed audit is re-keyed by the open that creates the audit key, so an unkeyed log whose key already exists was reset or rewritten", v.n)}
	case v.wrongKey:
		v.fail(v.n+1, fmt.Sprintf("the chain head names key %s, but the records verify under the key file (key %s): the head was altered", v.head.KeyID, KeyID(v.key)))
	case v.key != nil && !hmac.Equal([]byte(HeadMAC(v.key, v.head)), []byte(v.head.MAC)):
		v.fail(v.n+1, fmt.Sprintf("the chain head (record %d) does not carry its seal: it was moved back (records after %d deleted) or forged", v.n, v.n))
	case v.anchor != nil && v.anchor.ID > v.n:
		v.fail(v.n+1, fmt.Sprintf("the log ends at record %d and no longer extends the anchored head %d:%s (records %d to %d deleted)", v.n, v.anchor.ID, v.anchor.MAC, v.n+1, v.anchor.ID))
	default:
		return sessions.AuditReport{Records: v.n, OK: true}
	}
	return v.rep
}

// OpenOptions returns opts, or the zero options for nil, after checking
// the audit key's length: what every backend's OpenWith does first.
func OpenOptions(opts *sessions.Options) (*sessions.Options, error) {
	if opts == nil {
		return &sessions.Options{}, nil
	}
	if opts.AuditKey != nil {
		if err := CheckKey(opts.AuditKey); err != nil {
			return nil, err
		}
	}
	return opts, nil
}

// Scan feeds a backend's records with ids above after to fn in id order,
// inside the caller's transaction, until fn returns false.
type Scan func(after int64, fn func(sessions.AuditRecord) bool) error

// Adopt keys the unkeyed log that ends at head (whose row the caller's
// transaction holds): if its unkeyed chain is intact, rewrite re-keys every
// record (when there are any) and appendAfter appends the [RekeyType]
// record after the re-keyed head. A keyed log, or an unkeyed one whose
// chain is broken, is left as it is (VerifyAudit reports the latter).
func Adopt(head Head, scan Scan, rewrite func() (Head, error),
	appendAfter func(Head, sessions.NewAuditRecord, json.RawMessage) error) error {
	if head.KeyID != "" {
		return nil
	}
	v := NewVerifier(nil, head, nil)
	if err := scan(0, v.Add); err != nil {
		return err
	}
	rep := v.Finish()
	if !rep.OK {
		return nil
	}
	keyed := RekeyPayload{Rekeyed: rep.Records}
	if rep.Records > 0 {
		keyed.UnkeyedHead = head.Hash
		var err error
		if head, err = rewrite(); err != nil {
			return err
		}
	}
	payload, err := json.Marshal(keyed)
	if err != nil {
		return err
	}
	return appendAfter(head, sessions.NewAuditRecord{Type: RekeyType, Origin: "sessions"}, payload)
}

// rekeyBatch bounds the records Rekey holds in memory at once.
const rekeyBatch = 500

// Rekey rewrites the whole chain from its first record with MACs under
// key, a bounded batch at a time: update stores each batch's new prev_hash
// and hash. It returns the unsealed head after the last record.
func Rekey(key []byte, scan Scan, update func([]sessions.AuditRecord) error) (Head, error) {
	head := Head{Hash: Genesis}
	for {
		batch := make([]sessions.AuditRecord, 0, rekeyBatch)
		if err := scan(head.ID, func(r sessions.AuditRecord) bool {
			batch = append(batch, r)
			return len(batch) < rekeyBatch
		}); err != nil {
			return Head{}, err
		}
		if len(batch) == 0 {
			return head, nil
		}
		for i := range batch {
			batch[i].PrevHash = head.Hash
			batch[i].Hash = RecordMAC(key, batch[i])
			head = Head{ID: batch[i].ID, Hash: batch[i].Hash}
		}
		if err := update(batch); err != nil {
			return Head{}, err
		}
	}
}
