package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/lease"
)

// The turn lease is one row of turn_leases per session, written by single
// statements that the row lock of the upsert serialises across processes.
// Expiry is always judged by the database clock (now()), so processes with
// skewed clocks agree. Each statement is idempotent for its owner, which is
// what lets run retry it after a dead connection.

func checkLeaseArgs(sessionID, owner string, ttl time.Duration) error {
	switch {
	case owner == "":
		return errors.New("owner is empty")
	case ttl <= 0:
		return fmt.Errorf("ttl %v is not positive", ttl)
	case sessionID == "":
		return errors.New("session id is empty")
	}
	return nil
}

// AcquireTurn takes the session's turn lease for owner until ttl from now.
// It fails fast with ErrBusy while another owner holds an unexpired lease;
// an expired lease is taken over, and acquiring a lease owner already
// holds renews it. The session need not exist yet: a turn may reserve a
// new session id before creating the session. Whatever error it returns,
// a cancelled ctx's included, owner holds no lease afterwards (see
// lease.Acquire).
func (s *Store) AcquireTurn(ctx context.Context, sessionID, owner string, ttl time.Duration) error {
	if err := sessions.CheckText("session id", sessionID, "lease owner", owner); err != nil {
		return err
	}
	if err := checkLeaseArgs(sessionID, owner, ttl); err != nil {
		return fmt.Errorf("acquire turn on session %q: %w", sessionID, err)
	}
	return lease.Acquire(ctx, func(ctx context.Context) error {
		err := s.run(ctx, func(q querier) error {
			var got string
			return q.QueryRow(ctx, `INSERT INTO turn_leases AS l (session_id, owner, expires_at)
			VALUES ($1, $2, now() + $3 * interval '1 microsecond')
			ON CONFLICT (session_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
				WHERE l.expires_at <= now() OR l.owner = EXCLUDED.owner
			RETURNING owner`, sessionID, owner, micros(ttl)).Scan(&got)
		})
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("acquire turn on session %q: %w", sessionID, sessions.ErrBusy)
		}
		if err != nil {
			return fmt.Errorf("acquire turn on session %q: %w", sessionID, err)
		}
		return nil
	}, func(ctx context.Context) error {
		return s.ReleaseTurn(ctx, sessionID, owner)
	})
}

// RenewTurn extends owner's lease to ttl from now. ErrLeaseLost when owner
// does not hold it: released, or expired and taken over. A lease that
// expired but nobody took over is still owner's and is renewed.
func (s *Store) RenewTurn(ctx context.Context, sessionID, owner string, ttl time.Duration) error {
	if err := checkLeaseArgs(sessionID, owner, ttl); err != nil {
		return fmt.Errorf("renew turn on session %q: %w", sessionID, err)
	}
	var renewed int64
	err := s.run(ctx, func(q querier) error {
		tag, err := q.Exec(ctx, `UPDATE turn_leases SET expires_at = now() + $3 * interval '1 microsecond'
			WHERE session_id = $1 AND owner = $2`, sessionID, owner, micros(ttl))
		renewed = tag.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("renew turn on session %q: %w", sessionID, err)
	}
	if renewed == 0 {
		return fmt.Errorf("renew turn on session %q for %q: %w", sessionID, owner, sessions.ErrLeaseLost)
	}
	return nil
}

// ReleaseTurn drops owner's lease; a no-op if owner does not hold it.
func (s *Store) ReleaseTurn(ctx context.Context, sessionID, owner string) error {
	err := s.run(ctx, func(q querier) error {
		_, err := q.Exec(ctx, "DELETE FROM turn_leases WHERE session_id = $1 AND owner = $2", sessionID, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("release turn on session %q: %w", sessionID, err)
	}
	return nil
}

// micros is ttl in whole microseconds, rounded up so a tiny positive ttl
// is not an already expired lease.
func micros(ttl time.Duration) int64 {
	return (ttl + time.Microsecond - 1).Microseconds()
}
