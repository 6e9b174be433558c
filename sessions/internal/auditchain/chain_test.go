package auditchain

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"sync"
	"testing"

	"github.com/openprogram/openprogram/sessions"
)

// fakeWriters is a WriterStore in memory that holds every flush until
// release is closed, so that appends queue behind the first.
type fakeWriters struct {
	mu      sync.Mutex
	release chan struct{}
	flushes int
	recs    []sessions.AuditRecord
	head    Writer
}

func (f *fakeWriters) StartWriter(context.Context, sessions.AuditKey) (sessions.AuditKey, bool, Head, error) {
	return sessions.AuditKey{PublicKey: EncodePublicKey(testSigner.Public().(ed25519.PublicKey))}, true, Head{}, nil
}

func (f *fakeWriters) Flush(_ context.Context, w Writer, _ bool, recs []sessions.AuditRecord) ([]int64, bool, error) {
	<-f.release
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushes++
	var ids []int64
	for _, r := range recs {
		f.recs = append(f.recs, r)
		ids = append(ids, int64(len(f.recs)))
	}
	f.head = w
	return ids, false, nil
}

func (f *fakeWriters) WriterHead(context.Context, string) (Writer, bool, error) {
	return f.head, true, nil
}
func (f *fakeWriters) Revoke(context.Context, string) (bool, error) { return true, nil }

var testSigner = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))

// TestWriterChainGroupCommit: appends that arrive while a flush is in
// flight go out together in the next one; the chain stays gapless, each
// record follows the one before, and the head signs the last.
func TestWriterChainGroupCommit(t *testing.T) {
	ws := &fakeWriters{release: make(chan struct{})}
	c := newWriterChain(testSigner, "h", nil, ws)
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := c.append(t.Context(), sessions.NewAuditRecord{Type: "t"}, json.RawMessage(`{}`)); err != nil {
				t.Errorf("append %d: %v", i, err)
			}
		})
	}
	for { // every append queued or flushing before the first flush ends
		c.mu.Lock()
		queued := len(c.queue)
		c.mu.Unlock()
		if queued >= n-2 {
			break
		}
	}
	close(ws.release)
	wg.Wait()
	if len(ws.recs) != n+1 || ws.flushes > 3 {
		t.Fatalf("%d records in %d flushes, want %d (the key record too) in at most 3", len(ws.recs), ws.flushes, n+1)
	}
	prev := WriterGenesis(Writer{ID: c.w.ID, KeyID: c.key.ID})
	pub := testSigner.Public().(ed25519.PublicKey)
	for i, r := range ws.recs {
		if r.Seq != int64(i+1) || r.PrevHash != prev || !CheckWriterRecord(pub, r) {
			t.Fatalf("record %d = seq %d, prev %s: want seq %d after %s, signed", i, r.Seq, r.PrevHash, i+1, prev)
		}
		prev = r.Hash
	}
	if ws.head.Seq != n+1 || ws.head.Hash != prev || !Verify(pub, HeadMessage(ws.head), ws.head.Sig) {
		t.Errorf("head = %+v, want the last record, signed", ws.head)
	}
	t.Logf("%d appends in %d flushes", n, ws.flushes)
}
