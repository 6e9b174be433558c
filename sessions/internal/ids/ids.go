// Package ids generates store-assigned identifiers.
package ids

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// MessageID returns "msg_" and 32 hex digits: 48 bits of Unix milliseconds
// then 80 random bits, so new IDs land near each other in a B-tree index.
func MessageID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	_, _ = rand.Read(b[6:]) // crypto/rand.Read never fails
	return "msg_" + hex.EncodeToString(b[:])
}
