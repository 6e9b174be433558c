package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/lease"
)

func checkLease(op, owner string, ttl time.Duration) error {
	if owner == "" {
		return fmt.Errorf("%s: empty owner", op)
	}
	if ttl <= 0 {
		return fmt.Errorf("%s: ttl %v, want a positive duration", op, ttl)
	}
	return nil
}

// AcquireTurn implements [sessions.Store] with one conditional upsert: it
// inserts the lease, or takes it over when it expired or owner already
// holds it; a row left untouched means another live owner holds it.
// Whatever error it returns, a cancelled ctx's included, owner holds no
// lease afterwards (see lease.Acquire).
func (s *Store) AcquireTurn(ctx context.Context, sessionID, owner string, ttl time.Duration) error {
	if err := sessions.CheckText("session id", sessionID, "lease owner", owner); err != nil {
		return err
	}
	op := fmt.Sprintf("acquire turn on session %q", sessionID)
	if err := checkLease(op, owner, ttl); err != nil {
		return err
	}
	return lease.Acquire(ctx, func(ctx context.Context) error {
		now := time.Now()
		res, err := s.w.ExecContext(ctx, `INSERT INTO turn_leases (session_id, owner, expires_at) VALUES (?1, ?2, ?3)
		ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE turn_leases.owner = excluded.owner OR turn_leases.expires_at <= ?4`,
			sessionID, owner, micros(now.Add(ttl)), micros(now))
		return oneRow(op, sessions.ErrBusy, res, err)
	}, func(ctx context.Context) error {
		return s.ReleaseTurn(ctx, sessionID, owner)
	})
}

// RenewTurn implements [sessions.Store]. An expired lease nobody took over
// is still owner's and is renewed.
func (s *Store) RenewTurn(ctx context.Context, sessionID, owner string, ttl time.Duration) error {
	op := fmt.Sprintf("renew turn on session %q", sessionID)
	if err := checkLease(op, owner, ttl); err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `UPDATE turn_leases SET expires_at = ? WHERE session_id = ? AND owner = ?`,
		micros(time.Now().Add(ttl)), sessionID, owner)
	return oneRow(op, sessions.ErrLeaseLost, res, err)
}

// ReleaseTurn implements [sessions.Store].
func (s *Store) ReleaseTurn(ctx context.Context, sessionID, owner string) error {
	if owner == "" {
		return errors.New("release turn: empty owner")
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM turn_leases WHERE session_id = ? AND owner = ?`, sessionID, owner); err != nil {
		return fmt.Errorf("release turn on session %q: %w", sessionID, err)
	}
	return nil
}
