package auditchain

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// maxBatch bounds the records one flush writes.
const maxBatch = 256

// flushTimeout bounds one flush, whoever's request leads it.
const flushTimeout = 20 * time.Second

// writerChain is a log's own writer chain. Appends group-commit: the
// first append to find no flush running leads, and flushes, in one round
// trip each, whatever was queued meanwhile, until the queue is empty; the
// others wait for their record. Only the leader touches the head.
type writerChain struct {
	priv ed25519.PrivateKey
	key  sessions.AuditKey
	ws   WriterStore

	mu      sync.Mutex
	queue   []*pending
	leading bool

	// The leader's alone (handed over under mu).
	w       Writer
	started bool // the writer's row is stored
	stale   bool // a flush failed: its outcome is unknown, reload

	hmu sync.Mutex
	pub sessions.AuditHead // the last record flushed, for the anchor
}

type pending struct {
	in      sessions.NewAuditRecord
	payload json.RawMessage
	rec     sessions.AuditRecord
	err     error
	done    chan struct{} // nil: the store's own record, nobody waits
}

func newWriterChain(priv ed25519.PrivateKey, label string, anchor *sessions.AuditHead, ws WriterStore) *writerChain {
	pub := priv.Public().(ed25519.PublicKey)
	c := &writerChain{priv: priv, ws: ws,
		key: sessions.AuditKey{ID: WriterKeyID(pub), PublicKey: EncodePublicKey(pub), Label: label}}
	c.w = Writer{ID: NewWriterID(), KeyID: c.key.ID}
	if anchor != nil {
		c.w.AnchorID, c.w.AnchorHash = anchor.ID, anchor.MAC
	}
	return c
}

// head returns the writer's last record, or ok false before the first.
func (c *writerChain) head() (sessions.AuditHead, bool) {
	c.hmu.Lock()
	defer c.hmu.Unlock()
	return c.pub, c.pub.ID > 0
}

func (c *writerChain) append(ctx context.Context, in sessions.NewAuditRecord, payload json.RawMessage) (sessions.AuditRecord, error) {
	p := &pending{in: in, payload: payload, done: make(chan struct{})}
	c.mu.Lock()
	c.queue = append(c.queue, p)
	if !c.leading {
		c.leading = true
		c.lead(ctx, p.done)
	}
	c.mu.Unlock()
	select {
	case <-p.done:
		return p.rec, p.err
	case <-ctx.Done():
		return sessions.AuditRecord{}, ctx.Err()
	}
}

// lead flushes the queue, c.mu held and c.leading set, until own (the
// leader's record) is written; records queued meanwhile are handed to a
// goroutine that goes on leading, so that one caller does not flush for
// others for ever.
func (c *writerChain) lead(ctx context.Context, own chan struct{}) {
	for len(c.queue) > 0 {
		n := min(len(c.queue), maxBatch)
		batch := c.queue[:n:n]
		c.queue = c.queue[n:]
		c.mu.Unlock()
		c.flush(ctx, batch)
		c.mu.Lock()
		if own == nil {
			continue
		}
		select {
		case <-own:
			if len(c.queue) > 0 {
				go func() {
					c.mu.Lock()
					defer c.mu.Unlock()
					c.lead(context.WithoutCancel(ctx), nil)
				}()
				return
			}
		default:
		}
	}
	c.leading = false
}

// flush writes batch after the head, or fails every record of it.
func (c *writerChain) flush(ctx context.Context, batch []*pending) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	err := c.flushErr(ctx, &batch)
	for _, p := range batch {
		if err != nil {
			p.err = err
		}
		if p.done != nil {
			close(p.done)
		}
	}
}

func (c *writerChain) flushErr(ctx context.Context, batch *[]*pending) error {
	if c.stale {
		w, found, err := c.ws.WriterHead(ctx, c.w.ID)
		if err != nil {
			return err
		}
		if found {
			c.w, c.started = w, true
		}
		c.stale = false
	}
	first := !c.started
	if first {
		stored, added, shared, err := c.ws.StartWriter(ctx, c.key)
		if err != nil {
			return err
		}
		if stored.PublicKey != c.key.PublicKey {
			return fmt.Errorf("%w: the store records another public key under this key's id %s; run `openprogram audit verify`", sessions.ErrAuditBroken, c.key.ID)
		}
		if stored.Revoked {
			return revokedError(c.key)
		}
		c.w.BaseID, c.w.BaseHash = shared.ID, shared.Hash
		if added {
			payload, err := json.Marshal(map[string]string{"key_id": c.key.ID, "public_key": c.key.PublicKey, "label": c.key.Label})
			if err != nil {
				return err
			}
			*batch = append([]*pending{{in: sessions.NewAuditRecord{Type: sessions.AuditKeyAdded, Origin: "sessions"}, payload: payload}}, *batch...)
		}
	}
	w := c.w
	prev := w.Hash
	if w.Seq == 0 {
		prev = WriterGenesis(w)
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	recs := make([]sessions.AuditRecord, len(*batch))
	for i, p := range *batch {
		w.Seq++
		r := sessions.AuditRecord{TS: now, Type: p.in.Type, Origin: p.in.Origin, SessionID: p.in.SessionID,
			Payload: p.payload, PrevHash: prev, Writer: w.ID, Seq: w.Seq}
		SealRecord(c.priv, &r)
		prev = r.Hash
		recs[i] = r
	}
	w.Hash = prev
	if w.Started.IsZero() {
		w.Started = now
	}
	w.Sig = Sign(c.priv, HeadMessage(w))
	ids, revoked, err := c.ws.Flush(ctx, w, first, recs)
	if err != nil {
		c.stale = true
		return err
	}
	if revoked {
		return revokedError(c.key)
	}
	if len(ids) != len(recs) {
		c.stale = true
		return fmt.Errorf("the store wrote %d of %d audit records", len(ids), len(recs))
	}
	for i, p := range *batch {
		recs[i].ID = ids[i]
		p.rec = recs[i]
	}
	c.w, c.started = w, true
	c.hmu.Lock()
	c.pub = sessions.AuditHead{ID: ids[len(ids)-1], MAC: w.Hash}
	c.hmu.Unlock()
	return nil
}

func revokedError(k sessions.AuditKey) error {
	return fmt.Errorf("%w: this host's audit signing key %s (%s) was revoked (`openprogram audit keys list`); a revoked host cannot append audit records", sessions.ErrAuditKey, k.ID, k.Label)
}
