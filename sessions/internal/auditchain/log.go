package auditchain

import (
	"context"
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
}

// Log is the keyed audit log of a store over its backend's transactions;
// a backend's Store embeds it for AppendAudit, VerifyAudit and
// CheckAuditAnchor.
type Log struct {
	key         []byte
	write, read func(ctx context.Context, fn func(Tx) error) error
}

// NewLog returns the log keyed by key (nil: appends and verification fail
// closed) whose write runs fn in one read-write transaction that orders
// appends and whose read runs fn in one read-only snapshot.
func NewLog(key []byte, write, read func(ctx context.Context, fn func(Tx) error) error) Log {
	return Log{key: key, write: write, read: read}
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
	rec := Next(l.key, head, now, in, payload)
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

// VerifyAudit implements [sessions.Store]: it walks the chain in id
// order in one snapshot and compares its end with the sealed chain head.
func (l Log) VerifyAudit(ctx context.Context, anchor *sessions.AuditHead) (sessions.AuditReport, error) {
	if l.key == nil {
		return sessions.AuditReport{}, fmt.Errorf("verify audit: %w", CheckAppend(nil, Head{}))
	}
	var rep sessions.AuditReport
	err := l.read(ctx, func(tx Tx) error {
		head, err := tx.Head(ctx, false)
		if err != nil {
			return err
		}
		v := NewVerifier(l.key, head, anchor)
		if err := tx.Scan(ctx, 0, v.Add); err != nil {
			return err
		}
		rep = v.Finish()
		return nil
	})
	if err != nil {
		return sessions.AuditReport{}, fmt.Errorf("verify audit: %w", err)
	}
	return rep, nil
}

// CheckAuditAnchor implements [sessions.Store].
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
		return CheckAnchor(l.key, head, anchor, rec)
	})
	if err != nil {
		return sessions.AuditHead{}, fmt.Errorf("check the audit anchor: %w", err)
	}
	return sessions.AuditHead{ID: head.ID, MAC: head.Hash}, nil
}
