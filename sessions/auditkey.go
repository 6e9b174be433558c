package sessions

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// AuditKeyID names an audit writer's Ed25519 public key: 32 hex digits of
// its SHA-256. A verifier recomputes it from the stored key, so a store
// cannot pair an id with another key.
func AuditKeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:16])
}

// EncodeAuditKey is the stored form of a writer's public key ([AuditKey]
// PublicKey): unpadded base64url.
func EncodeAuditKey(pub ed25519.PublicKey) string {
	return base64.RawURLEncoding.EncodeToString(pub)
}

// DecodeAuditKey parses [EncodeAuditKey]'s form; ok is false for anything
// that is not a 32-byte key.
func DecodeAuditKey(s string) (ed25519.PublicKey, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, false
	}
	return ed25519.PublicKey(b), true
}
