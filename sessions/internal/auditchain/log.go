package auditchain

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/openprogram/sessions"
)

// Tx is the SQL a store backend runs on its audit log inside one of its
// transactions; the chain's rules around it are Log's.
type Tx interface {
	// Head reads the stored chain head; lock takes its row lock where the
	// backend needs one to order appends.
	Head(ctx context.Context, lock bool) (Head, error)
	// Now is the time a record appended now is stamped with, to the
	// microsecond.
	Now(ctx context.Context) (time.Time, error)
	// Write inserts rec and stores head, the sealed head after it.
	Write(ctx context.Context, rec sessions.AuditRecord, head Head) error
	// Scan feeds the records with ids above after to fn in id order until
	// fn returns false.
	Scan(ctx context.Context, after int64, fn func(sessions.AuditRecord) bool) error
	// Record reads the record with id; found is false when there is none.
	Record(ctx context.Context, id int64) (rec sessions.AuditRecord, found bool, err error)
	// Unguarded runs fn with the log's append-only guards lifted, and
	// restores them before the transaction commits.
	Unguarded(ctx context.Context, fn func() error) error
	// SetHashes stores the re-keyed prev_hash and hash of every record of
	// batch.
	SetHashes(ctx context.Context, batch []sessions.AuditRecord) error
	// NextID reserves the id of a record of the shared chain.
	NextID(ctx context.Context) (int64, error)
	// Keys reads the stored writer keys (Revoked from the column).
	Keys(ctx context.Context) ([]sessions.AuditKey, error)
	// Writers reads the stored writer heads.
	Writers(ctx context.Context) ([]Writer, error)
	// ScanWriters feeds every record of a writer chain to fn, ordered by
	// writer and Seq, until fn returns false.
	ScanWriters(ctx context.Context, fn func(sessions.AuditRecord) bool) error
}

// WriterStore is the SQL of a backend's writer chains, each call one
// statement (or one short transaction) of its own: no lock is shared
// between writers.
type WriterStore interface {
	// StartWriter records key unless a key of its id is there, and reads
	// the stored key (its Revoked from the column), whether this call
	// added it, and the shared chain's head.
	StartWriter(ctx context.Context, key sessions.AuditKey) (stored sessions.AuditKey, added bool, shared Head, err error)
	// Flush inserts recs, consecutive records of w's chain, and stores w
	// as the writer's head (a new row when first), in one round trip,
	// unless w's key was revoked (revoked true, nothing written). It
	// returns the ids the database gave recs, in order.
	Flush(ctx context.Context, w Writer, first bool, recs []sessions.AuditRecord) (ids []int64, revoked bool, err error)
	// WriterHead reads writer id's stored head.
	WriterHead(ctx context.Context, id string) (Writer, bool, error)
	// Revoke marks key id revoked (found false when there is none).
	Revoke(ctx context.Context, id string) (found bool, err error)
}

// Log is the keyed audit log of a store over its backend's transactions;
// a backend's Store embeds it for AppendAudit, VerifyAudit and
// CheckAuditAnchor.
type Log struct {
	key         []byte
	write, read func(ctx context.Context, fn func(Tx) error) error
	chain       *writerChain // nil: appends go to the shared chain
	pins        map[string]ed25519.PublicKey
}

// NewLog returns the log keyed by key (nil: appends to the shared chain
// and its verification fail closed) whose write runs fn in one read-write
// transaction that orders appends to the shared chain and whose read runs
// fn in one read-only snapshot. With opts.AuditSigner, appends go to a
// writer chain of this log's own through ws.
func NewLog(key []byte, opts *sessions.Options, ws WriterStore, write, read func(ctx context.Context, fn func(Tx) error) error) Log {
	l := Log{key: key, write: write, read: read}
	if opts != nil {
		l.pins = opts.AuditPins
		if opts.AuditSigner != nil {
			l.chain = newWriterChain(opts.AuditSigner, opts.AuditSignerLabel, opts.AuditAnchor, ws)
		}
	}
	return l
}

// AppendAudit implements [sessions.Store].
func (l Log) AppendAudit(ctx context.Context, in sessions.NewAuditRecord) (sessions.AuditRecord, error) {
	if err := in.CheckText(); err != nil {
		return sessions.AuditRecord{}, err
	}
	if in.Type == "" {
		return sessions.AuditRecord{}, errors.New("append audit record: empty type")
	}
	payload, err := CanonicalPayload(in.Payload)
	if err != nil {
		return sessions.AuditRecord{}, fmt.Errorf("append audit record %q: %w", in.Type, err)
	}
	if l.chain != nil {
		rec, err := l.chain.append(ctx, in, payload)
		if err != nil {
			return sessions.AuditRecord{}, fmt.Errorf("append audit record %q: %w", in.Type, err)
		}
		return rec, nil
	}
	var rec sessions.AuditRecord
	err = l.write(ctx, func(tx Tx) error {
		head, err := tx.Head(ctx, true)
		if err != nil {
			return err
		}
		if err := CheckAppend(l.key, head); err != nil {
			return err
		}
		rec, err = l.appendAfter(ctx, tx, head, in, payload)
		return err
	})
	if err != nil {
		return sessions.AuditRecord{}, fmt.Errorf("append audit record %q: %w", in.Type, err)
	}
	return rec, nil
}

// appendAfter writes the record after head and moves the sealed head.
func (l Log) appendAfter(ctx context.Context, tx Tx, head Head, in sessions.NewAuditRecord, payload json.RawMessage) (sessions.AuditRecord, error) {
	now, err := tx.Now(ctx)
	if err != nil {
		return sessions.AuditRecord{}, err
	}
	id, err := tx.NextID(ctx)
	if err != nil {
		return sessions.AuditRecord{}, err
	}
	rec := Next(l.key, head, id, now, in, payload)
	if err := tx.Write(ctx, rec, Seal(l.key, rec)); err != nil {
		return sessions.AuditRecord{}, err
	}
	return rec, nil
}

// KeyTx keys an unkeyed log (see [sessions.Options] and [Adopt]) within
// tx, a write transaction: the migration that creates a store keys its log
// in the same transaction, so no process ever sees it unkeyed.
func (l Log) KeyTx(ctx context.Context, tx Tx) error {
	head, err := tx.Head(ctx, true)
	if err != nil {
		return fmt.Errorf("key the audit log: %w", err)
	}
	scan := func(after int64, fn func(sessions.AuditRecord) bool) error { return tx.Scan(ctx, after, fn) }
	err = Adopt(head, scan,
		func() (h Head, err error) {
			err = tx.Unguarded(ctx, func() error {
				var err error
				h, err = Rekey(l.key, scan, func(batch []sessions.AuditRecord) error { return tx.SetHashes(ctx, batch) })
				return err
			})
			return h, err
		},
		func(h Head, in sessions.NewAuditRecord, payload json.RawMessage) error {
			_, err := l.appendAfter(ctx, tx, h, in, payload)
			return err
		})
	if err != nil {
		return fmt.Errorf("key the audit log: %w", err)
	}
	return nil
}
