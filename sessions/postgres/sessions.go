package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/ids"
	"github.com/openprogram/openprogram/sessions/internal/input"
	"github.com/openprogram/openprogram/sessions/internal/rowerr"
)

const sessionColumns = "id, agent_id, title, source, created_at, updated_at, COALESCE(head_id, ''), archived"

func scanSession(row pgx.Row) (sessions.Session, error) {
	var s sessions.Session
	err := row.Scan(&s.ID, &s.AgentID, &s.Title, &s.Source, &s.CreatedAt, &s.UpdatedAt, &s.HeadID, &s.Archived)
	return s, err
}

// nullTime maps the zero time to NULL, which the SQL turns into now.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// CreateSession stores s (ErrExists if its ID is taken). A zero CreatedAt
// becomes the database's current time and a zero UpdatedAt the creation
// time; HeadID is ignored.
func (s *Store) CreateSession(ctx context.Context, in sessions.Session) (sessions.Session, error) {
	if err := in.CheckText(); err != nil {
		return sessions.Session{}, err
	}
	if in.ID == "" {
		return sessions.Session{}, errors.New("create session: id is empty; the caller chooses session ids")
	}
	var out sessions.Session
	err := s.tx(ctx, readWrite, func(tx pgx.Tx) error {
		var err error
		out, err = scanSession(tx.QueryRow(ctx, `INSERT INTO sessions
			(id, agent_id, title, source, created_at, updated_at, head_id, archived)
			VALUES ($1, $2, $3, $4, COALESCE($5, now()), COALESCE($6, $5, now()), NULL, $7)
			RETURNING `+sessionColumns,
			in.ID, in.AgentID, in.Title, in.Source, nullTime(in.CreatedAt), nullTime(in.UpdatedAt), in.Archived))
		return err
	})
	if code, _ := pgCode(err); code == codeUniqueViolation {
		return sessions.Session{}, fmt.Errorf("create session %q: %w", in.ID, sessions.ErrExists)
	}
	if err != nil {
		return sessions.Session{}, fmt.Errorf("create session %q: %w", in.ID, err)
	}
	return out, nil
}

// GetSession returns the session with id, or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (sessions.Session, error) {
	return getByID(ctx, s, "session", "SELECT "+sessionColumns+" FROM sessions WHERE id = $1", id, scanSession)
}

// queryAll reads every row of query, each scanned by scan, retrying as
// run does. No rows is an empty slice, not nil.
func queryAll[T any](ctx context.Context, s *Store, scan func(pgx.Row) (T, error), query string, args ...any) ([]T, error) {
	var out []T
	err := s.run(ctx, func(q querier) error {
		rows, err := q.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
		return err
	})
	return out, err
}

// getByID reads the what (a "session", a "message") with id by query, one
// row scanned by scan, as rowerr.Get says.
func getByID[T any](ctx context.Context, s *Store, what, query, id string, scan func(pgx.Row) (T, error)) (T, error) {
	return rowerr.Get(what, id, pgx.ErrNoRows, func() (out T, err error) {
		err = s.run(ctx, func(q querier) error {
			out, err = scan(q.QueryRow(ctx, query, id))
			return err
		})
		return out, err
	})
}

// ListSessions returns up to limit non-archived sessions, most recently
// updated first, ties broken by id descending. It walks sessions_list_idx
// and stops after limit rows, so it costs the same with a thousand or a
// million sessions.
func (s *Store) ListSessions(ctx context.Context, limit int) ([]sessions.Session, error) {
	if limit <= 0 {
		return nil, nil
	}
	out, err := queryAll(ctx, s, scanSession, "SELECT "+sessionColumns+` FROM sessions WHERE NOT archived
		ORDER BY updated_at DESC, id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// UpdateSession applies u (nil fields are kept) and returns the session,
// or ErrNotFound. A change bumps updated_at, never backwards.
func (s *Store) UpdateSession(ctx context.Context, id string, u sessions.SessionUpdate) (sessions.Session, error) {
	if err := input.Update(id, u); err != nil {
		return sessions.Session{}, err
	}
	var out sessions.Session
	err := s.tx(ctx, readWrite, func(tx pgx.Tx) error {
		var err error
		out, err = scanSession(tx.QueryRow(ctx, `UPDATE sessions SET
			title = COALESCE($2, title),
			archived = COALESCE($3, archived),
			updated_at = CASE WHEN $2::text IS NULL AND $3::boolean IS NULL THEN updated_at
				ELSE GREATEST(updated_at, clock_timestamp()) END
			WHERE id = $1 RETURNING `+sessionColumns, id, u.Title, u.Archived))
		return err
	})
	return rowerr.One(fmt.Sprintf("update session %q", id), pgx.ErrNoRows, out, err)
}

// DeleteSession deletes the session, its messages, its standing approvals
// (foreign-key cascade) and its lease, or returns ErrNotFound.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	if sessions.HasNUL(id) {
		return fmt.Errorf("session: %w", sessions.ErrNotFound)
	}
	err := s.tx(ctx, readWrite, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM sessions WHERE id = $1", id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return sessions.ErrNotFound
		}
		_, err = tx.Exec(ctx, "DELETE FROM turn_leases WHERE session_id = $1", id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete session %q: %w", id, err)
	}
	return nil
}

const messageColumns = "id, session_id, COALESCE(parent_id, ''), role, content, created_at, metadata"

func scanMessage(row pgx.Row) (sessions.Message, error) {
	var m sessions.Message
	var meta *string
	if err := row.Scan(&m.ID, &m.SessionID, &m.ParentID, &m.Role, &m.Content, &m.CreatedAt, &meta); err != nil {
		return sessions.Message{}, err
	}
	if meta != nil {
		m.Metadata = json.RawMessage(*meta)
	}
	return m, nil
}

// AppendMessages appends msgs as a chain under parentID ("" for a root) and,
// when moveHead is true, moves the head to the last one and bumps
// updated_at, in one transaction: a crash leaves either nothing of the
// turn or all of it. The database checks that the session exists and that
// the parent belongs to it (ErrNotFound otherwise).
func (s *Store) AppendMessages(ctx context.Context, sessionID, parentID string, msgs []sessions.NewMessage, moveHead bool) ([]sessions.Message, error) {
	if err := input.Append(sessionID, parentID, msgs); err != nil {
		return nil, err
	}
	n := len(msgs)
	var (
		idCol      = make([]string, n)
		parentCol  = make([]*string, n)
		roleCol    = make([]string, n)
		contentCol = make([]string, n)
		metaCol    = make([]*string, n)
	)
	prev := parentID
	for i, m := range msgs {
		if err := checkText(fmt.Sprintf("message %d content", i), m.Content); err != nil {
			return nil, fmt.Errorf("append messages to session %q: %w", sessionID, err)
		}
		if len(m.Metadata) > 0 {
			meta := string(m.Metadata)
			metaCol[i] = &meta
		}
		idCol[i] = ids.MessageID()
		if prev != "" {
			p := prev
			parentCol[i] = &p
		}
		prev = idCol[i]
		roleCol[i] = m.Role
		contentCol[i] = m.Content
	}

	out := make([]sessions.Message, 0, n)
	err := s.tx(ctx, readWrite, func(tx pgx.Tx) error {
		out = out[:0]
		// clock_timestamp() rather than now(): every message of the chain
		// gets its own, increasing time.
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO messages (id, session_id, parent_id, role, content, created_at, metadata)
			SELECT m.id, $1, m.parent_id, m.role, m.content, clock_timestamp(), m.metadata
			FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) WITH ORDINALITY
				AS m(id, parent_id, role, content, metadata, ord)
			ORDER BY m.ord
			RETURNING `+messageColumns, sessionID, idCol, parentCol, roleCol, contentCol, metaCol)
		if moveHead {
			b.Queue(`UPDATE sessions SET head_id = $2, updated_at = GREATEST(updated_at, clock_timestamp())
				WHERE id = $1`, sessionID, idCol[n-1])
		}
		br := tx.SendBatch(ctx, b)
		rows, err := br.Query()
		if err == nil {
			var got []sessions.Message
			got, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessions.Message, error) { return scanMessage(r) })
			byID := make(map[string]sessions.Message, len(got))
			for _, m := range got {
				byID[m.ID] = m
			}
			for _, id := range idCol {
				out = append(out, byID[id])
			}
		}
		if err == nil && moveHead {
			_, err = br.Exec()
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if code, constraint := pgCode(err); code == codeForeignKeyViolation {
		switch constraint {
		case "messages_session_fkey":
			return nil, fmt.Errorf("append messages to session %q: session %w", sessionID, sessions.ErrNotFound)
		case "messages_parent_fkey":
			return nil, fmt.Errorf("append messages to session %q: parent message %q in this session %w", sessionID, parentID, sessions.ErrNotFound)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("append messages to session %q: %w", sessionID, err)
	}
	return out, nil
}

// GetMessage returns the message with id, or ErrNotFound.
func (s *Store) GetMessage(ctx context.Context, id string) (sessions.Message, error) {
	return getByID(ctx, s, "message", "SELECT "+messageColumns+" FROM messages WHERE id = $1", id, scanMessage)
}

// Branch returns the chain from the session's head to the root, root
// first. It is empty when the session has no head; ErrNotFound when the
// session does not exist.
//
// It reads the session and all its messages in one statement (one index
// scan on messages_session_idx) and walks the parent links in Go. A
// recursive CTE walking the same chain costs the executor a rescan per
// step, about 15 µs each: 150 ms for a 10,000-message branch against 2 ms
// for the scan. The price is reading the messages of abandoned forks too,
// which in a conversation are few.
func (s *Store) Branch(ctx context.Context, sessionID string) ([]sessions.Message, error) {
	if sessions.HasNUL(sessionID) {
		return nil, fmt.Errorf("session: %w", sessions.ErrNotFound)
	}
	var out []sessions.Message
	err := s.run(ctx, func(q querier) error {
		out = nil
		rows, err := q.Query(ctx, `SELECT COALESCE(s.head_id, ''), m.id IS NOT NULL, COALESCE(m.id, ''),
				COALESCE(m.parent_id, ''), COALESCE(m.role, ''), COALESCE(m.content, ''),
				COALESCE(m.created_at, 'epoch'), m.metadata
			FROM sessions s LEFT JOIN messages m ON m.session_id = s.id AND s.head_id IS NOT NULL
			WHERE s.id = $1`, sessionID)
		if err != nil {
			return err
		}
		var (
			head  string
			has   bool
			m     sessions.Message
			meta  pgtype.Text
			found bool
			byID  = map[string]sessions.Message{}
		)
		_, err = pgx.ForEachRow(rows, []any{&head, &has, &m.ID, &m.ParentID, &m.Role, &m.Content, &m.CreatedAt, &meta}, func() error {
			found = true
			if has {
				m.SessionID, m.Metadata = sessionID, nil
				if meta.Valid {
					m.Metadata = json.RawMessage(meta.String)
				}
				byID[m.ID] = m
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !found {
			return sessions.ErrNotFound
		}
		for cur := head; cur != ""; {
			m, ok := byID[cur]
			if !ok || len(out) > len(byID) {
				return fmt.Errorf("message %q of the chain is missing: the tree is inconsistent", cur)
			}
			out = append(out, m)
			cur = m.ParentID
		}
		slices.Reverse(out)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("branch of session %q: %w", sessionID, err)
	}
	return out, nil
}

// BranchBefore returns a page of a branch read backwards (see
// [sessions.Store]): a recursive query follows the parent links from the
// page's newest message, one primary-key lookup per message, and stops
// after limit. An empty page is told apart (no head or a root, an unknown
// session or message) by a second statement.
func (s *Store) BranchBefore(ctx context.Context, sessionID, beforeID string, limit int) ([]sessions.Message, error) {
	if err := input.BranchBefore(sessionID, beforeID, limit); err != nil {
		return nil, err
	}
	var page []sessions.Message
	err := s.run(ctx, func(q querier) error {
		rows, err := q.Query(ctx, `WITH RECURSIVE chain AS (
				SELECT id, session_id, COALESCE(parent_id, '') AS parent, role, content, created_at, metadata, parent_id AS up, 1 AS n
				FROM messages
				WHERE session_id = $1 AND id = CASE WHEN $2 = ''
					THEN (SELECT head_id FROM sessions WHERE id = $1)
					ELSE (SELECT b.parent_id FROM messages b WHERE b.id = $2 AND b.session_id = $1) END
				UNION ALL
				SELECT p.id, p.session_id, COALESCE(p.parent_id, ''), p.role, p.content, p.created_at, p.metadata, p.parent_id, c.n + 1
				FROM chain c JOIN messages p ON p.id = c.up WHERE c.n < $3
			)
			SELECT id, session_id, parent, role, content, created_at, metadata FROM chain ORDER BY n`, sessionID, beforeID, limit)
		if err != nil {
			return err
		}
		page, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (sessions.Message, error) { return scanMessage(r) })
		if err != nil || len(page) > 0 {
			return err
		}
		var session, before bool
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = $1),
				$2 = '' OR EXISTS (SELECT 1 FROM messages WHERE id = $2 AND session_id = $1)`, sessionID, beforeID).Scan(&session, &before); err != nil {
			return err
		}
		if !session || !before {
			return sessions.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("branch of session %q before %q: %w", sessionID, beforeID, err)
	}
	return input.Chain(sessionID, page)
}

// SetHead moves the session's head to messageID, which must belong to the
// session (ErrNotFound otherwise), and bumps updated_at.
func (s *Store) SetHead(ctx context.Context, sessionID, messageID string) error {
	if sessions.HasNUL(sessionID, messageID) {
		return fmt.Errorf("session or message: %w", sessions.ErrNotFound)
	}
	err := s.tx(ctx, readWrite, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE sessions SET head_id = $2, updated_at = GREATEST(updated_at, clock_timestamp())
			WHERE id = $1 AND EXISTS (SELECT 1 FROM messages WHERE id = $2 AND session_id = $1)`, sessionID, messageID)
		if err == nil && tag.RowsAffected() == 0 {
			return sessions.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("set head of session %q to %q: %w", sessionID, messageID, err)
	}
	return nil
}
