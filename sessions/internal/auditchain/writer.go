package auditchain

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// A writer chain is the audit chain of one writer: one store opened to
// write with a signing key (one process). Its records are numbered 1, 2,
// ... (Seq) without gaps, each hash covers the previous one, the first
// one's previous hash binds the writer to its key, to the shared chain's
// head when it started and to the record its host anchored last, and every
// record and the writer's stored head carry an Ed25519 signature under the
// writer's key. Appends of one writer never wait on another's: the only
// row two appends touch is the writer's own.

// WriterKeyID is [sessions.AuditKeyID].
func WriterKeyID(pub ed25519.PublicKey) string { return sessions.AuditKeyID(pub) }

// EncodePublicKey is [sessions.EncodeAuditKey].
func EncodePublicKey(pub ed25519.PublicKey) string { return sessions.EncodeAuditKey(pub) }

// DecodePublicKey is [sessions.DecodeAuditKey].
func DecodePublicKey(s string) (ed25519.PublicKey, bool) { return sessions.DecodeAuditKey(s) }

// Writer is the stored head of one writer chain.
type Writer struct {
	ID    string // 32 random hex digits
	KeyID string // WriterKeyID of the key that signs it
	// BaseID and BaseHash name the shared chain's head when the writer
	// started (0 and "" on an empty one); AnchorID and AnchorHash the
	// record its host had anchored (0 and "" when none).
	BaseID     int64
	BaseHash   string
	AnchorID   int64
	AnchorHash string
	Seq        int64  // last record's Seq, 0 before the first
	Hash       string // last record's hash
	Sig        string // hex Ed25519 signature over the head (HeadMessage)
	Started    time.Time
}

// NewWriterID returns a fresh writer id.
func NewWriterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WriterGenesis is the previous hash of a writer's first record.
func WriterGenesis(w Writer) string {
	return fields(sha256.New(), []byte("openprogram audit writer"), []byte(w.ID), []byte(w.KeyID),
		strconv.AppendInt(nil, w.BaseID, 10), []byte(w.BaseHash), strconv.AppendInt(nil, w.AnchorID, 10), []byte(w.AnchorHash))
}

// WriterRecordHash is the hash of a writer chain's record: SHA-256 over a
// domain tag, its previous hash, writer, Seq, time (Unix microseconds),
// type, origin, session id and payload, each length-prefixed. The global
// id is not covered: the database assigns it.
func WriterRecordHash(r sessions.AuditRecord) string {
	return fields(sha256.New(), []byte("openprogram audit writer record"), []byte(r.PrevHash), []byte(r.Writer),
		strconv.AppendInt(nil, r.Seq, 10), strconv.AppendInt(nil, r.TS.UnixMicro(), 10),
		[]byte(r.Type), []byte(r.Origin), []byte(r.SessionID), r.Payload)
}

// HeadMessage is what a writer's head signature covers.
func HeadMessage(w Writer) []byte {
	return []byte(fields(sha256.New(), []byte("openprogram audit writer head"), []byte(w.ID), []byte(w.KeyID),
		strconv.AppendInt(nil, w.Seq, 10), []byte(w.Hash)))
}

// Sign returns the hex Ed25519 signature of msg under priv.
func Sign(priv ed25519.PrivateKey, msg []byte) string {
	return hex.EncodeToString(ed25519.Sign(priv, msg))
}

// Verify says whether sig (hex) is pub's signature of msg.
func Verify(pub ed25519.PublicKey, msg []byte, sig string) bool {
	b, err := hex.DecodeString(sig)
	return err == nil && len(b) == ed25519.SignatureSize && ed25519.Verify(pub, msg, b)
}

// SealRecord sets r's Hash and Sig: r's PrevHash, Writer and Seq are set.
func SealRecord(priv ed25519.PrivateKey, r *sessions.AuditRecord) {
	r.Hash = WriterRecordHash(*r)
	r.Sig = Sign(priv, []byte(r.Hash))
}

// CheckWriterRecord says whether r is a record of a writer signed by pub:
// its hash recomputes and its signature verifies.
func CheckWriterRecord(pub ed25519.PublicKey, r sessions.AuditRecord) bool {
	return WriterRecordHash(r) == r.Hash && Verify(pub, []byte(r.Hash), r.Sig)
}
