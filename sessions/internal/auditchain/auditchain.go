// Package auditchain holds the audit hash chain shared by every backend:
// the canonical payload form, the record hash and the chain verifier, so a
// chain written by one backend verifies the same way in another.
package auditchain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// Genesis is the previous hash of the first record.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// CanonicalPayload returns raw re-encoded compactly with object keys sorted
// at every depth and numbers kept verbatim, so a backend that normalises
// JSON (PostgreSQL jsonb) hashes the same bytes it hands back. An empty
// payload becomes {}.
func CanonicalPayload(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("audit payload is not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("audit payload is not valid JSON: trailing data")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, fmt.Errorf("encode audit payload: %w", err)
	}
	return json.RawMessage(bytes.TrimRight(buf.Bytes(), "\n")), nil
}

// Hash returns hex(SHA-256(prevHash, id, ts in Unix microseconds, type,
// origin, session id, payload)), each field length-prefixed so no two
// records share an encoding.
func Hash(prevHash string, id int64, ts time.Time, typ, origin, sessionID string, payload []byte) string {
	h := sha256.New()
	field := func(b []byte) {
		h.Write(strconv.AppendInt(nil, int64(len(b)), 10))
		h.Write([]byte{':'})
		h.Write(b)
	}
	field([]byte(prevHash))
	field(strconv.AppendInt(nil, id, 10))
	field(strconv.AppendInt(nil, ts.UnixMicro(), 10))
	field([]byte(typ))
	field([]byte(origin))
	field([]byte(sessionID))
	field(payload)
	return hex.EncodeToString(h.Sum(nil))
}

// RecordHash is Hash over r's own fields.
func RecordHash(r sessions.AuditRecord) string {
	return Hash(r.PrevHash, r.ID, r.TS, r.Type, r.Origin, r.SessionID, r.Payload)
}

// Verifier walks a chain in id order. Feed every record to Add, then call
// Finish with the stored chain head.
type Verifier struct {
	n    int64
	prev string
	rep  sessions.AuditReport
	done bool
}

// Add checks the next record. It returns false once the chain is broken;
// later records need not be fed.
func (v *Verifier) Add(r sessions.AuditRecord) bool {
	if v.done {
		return false
	}
	if v.prev == "" {
		v.prev = Genesis
	}
	want := v.n + 1
	switch {
	case r.ID != want:
		return v.fail(want, fmt.Sprintf("audit record %d is missing (next stored record is %d)", want, r.ID))
	case r.PrevHash != v.prev:
		return v.fail(r.ID, fmt.Sprintf("audit record %d does not follow record %d (prev_hash mismatch: deleted or reordered)", r.ID, r.ID-1))
	case RecordHash(r) != r.Hash:
		return v.fail(r.ID, fmt.Sprintf("audit record %d does not match its hash (edited)", r.ID))
	}
	v.n = r.ID
	v.prev = r.Hash
	return true
}

func (v *Verifier) fail(id int64, problem string) bool {
	v.done = true
	v.rep = sessions.AuditReport{Records: v.n, FirstBadID: id, Problem: problem}
	return false
}

// Finish compares the walked chain with the stored head (headID 0 and
// headHash "" when no record was ever appended) and returns the report.
// Records counts the records verified before any problem.
func (v *Verifier) Finish(headID int64, headHash string) sessions.AuditReport {
	if v.done {
		return v.rep
	}
	last := v.prev
	if last == "" {
		last = Genesis
	}
	if headHash == "" {
		headHash = Genesis
	}
	switch {
	case headID > v.n:
		v.fail(v.n+1, fmt.Sprintf("audit records %d to %d are missing (chain head is %d)", v.n+1, headID, headID))
	case headID < v.n:
		v.fail(headID+1, fmt.Sprintf("audit record %d is not covered by the chain head %d (inserted)", headID+1, headID))
	case headHash != last:
		v.fail(v.n, fmt.Sprintf("audit record %d does not match the chain head hash", v.n))
	default:
		return sessions.AuditReport{Records: v.n, OK: true}
	}
	return v.rep
}
