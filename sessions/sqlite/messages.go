package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/internal/ids"
	"github.com/openprogram/openprogram/sessions/internal/input"
	"github.com/openprogram/openprogram/sessions/internal/rowerr"
)

// testHookInTurn, when set (tests only), runs inside AppendMessages' write
// transaction after the messages are inserted and before the head moves and
// the transaction commits.
var testHookInTurn func()

// internRole returns the package constant for a known role, so long
// branches do not hold one string per message.
func internRole(r string) string {
	switch r {
	case sessions.RoleUser:
		return sessions.RoleUser
	case sessions.RoleAssistant:
		return sessions.RoleAssistant
	case sessions.RoleTool:
		return sessions.RoleTool
	case sessions.RoleSystem:
		return sessions.RoleSystem
	}
	return r
}

// AppendMessages implements [sessions.Store]: the messages, the head move
// and updated_at are one BEGIN IMMEDIATE transaction.
func (s *Store) AppendMessages(ctx context.Context, sessionID, parentID string, msgs []sessions.NewMessage, moveHead bool) ([]sessions.Message, error) {
	if err := input.Append(sessionID, parentID, msgs); err != nil {
		return nil, err
	}
	now := nowMicros()
	out := make([]sessions.Message, len(msgs))
	var parentSeq, parentRun int64
	var parentRunParent sql.NullInt64
	parent := parentID
	for i, m := range msgs {
		out[i] = sessions.Message{
			ID: ids.MessageID(), SessionID: sessionID, ParentID: parent, Role: m.Role, Content: m.Content,
			CreatedAt: fromMicros(now), Metadata: slices.Clone(m.Metadata),
		}
		parent = out[i].ID
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, sessionID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("append messages: session %q: %w", sessionID, sessions.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("append messages to session %q: %w", sessionID, err)
		}
		if parentID != "" {
			err := tx.QueryRowContext(ctx, `SELECT seq, run_start, run_parent FROM messages WHERE id = ? AND session_id = ?`, parentID, sessionID).
				Scan(&parentSeq, &parentRun, &parentRunParent)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("append messages to session %q: parent message %q: %w", sessionID, parentID, sessions.ErrNotFound)
			} else if err != nil {
				return fmt.Errorf("append messages to session %q: %w", sessionID, err)
			}
		}
		// The write lock is ours: the next keys are free.
		var last int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM messages`).Scan(&last); err != nil {
			return fmt.Errorf("append messages to session %q: %w", sessionID, err)
		}
		// The first message continues its parent's run when it directly
		// follows it; the rest of the chain continues the first's.
		run := runInfo{start: last + 1}
		switch {
		case parentID != "" && parentSeq == last:
			run = runInfo{start: parentRun, parent: parentRunParent}
		case parentID != "":
			run.parent = sql.NullInt64{Int64: parentSeq, Valid: true}
		}
		if err := insertMessages(ctx, tx, out, parentSeq, last+1, run); err != nil {
			return fmt.Errorf("append messages to session %q: %w", sessionID, err)
		}
		if testHookInTurn != nil {
			testHookInTurn()
		}
		if moveHead {
			if _, err := tx.ExecContext(ctx, `UPDATE sessions SET head_id = ?, updated_at = max(updated_at, ?) WHERE id = ?`,
				out[len(out)-1].ID, now, sessionID); err != nil {
				return fmt.Errorf("append messages to session %q: move head: %w", sessionID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertBatch rows go in one multi-row INSERT (SQLite allows 32766
// parameters per statement; 11 per row).
const insertBatch = 256

// runInfo is the run a chain of new messages belongs to: its first key and
// that message's parent key (null for a root).
type runInfo struct {
	start  int64
	parent sql.NullInt64
}

// insertMessages inserts the chain msgs with keys first, first+1, ...,
// msgs[0] under the parent key parentSeq (0 for a root), all in run.
func insertMessages(ctx context.Context, tx *sql.Tx, msgs []sessions.Message, parentSeq, first int64, run runInfo) error {
	var full *sql.Stmt
	defer func() {
		if full != nil {
			full.Close()
		}
	}()
	seq := first
	for len(msgs) > 0 {
		n := min(len(msgs), insertBatch)
		batch := msgs[:n]
		msgs = msgs[n:]
		args := make([]any, 0, 11*n)
		for _, m := range batch {
			var parent, pseq, meta any
			if m.ParentID != "" {
				parent, pseq = m.ParentID, parentSeq
			}
			if len(m.Metadata) > 0 {
				meta = string(m.Metadata)
			}
			args = append(args, seq, m.ID, m.SessionID, parent, pseq, run.start, run.parent, m.Role, m.Content, micros(m.CreatedAt), meta)
			parentSeq = seq
			seq++
		}
		q := insertMessagesSQL(n)
		var err error
		if n == insertBatch {
			if full == nil {
				if full, err = tx.PrepareContext(ctx, q); err != nil {
					return err
				}
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = tx.ExecContext(ctx, q, args...)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func insertMessagesSQL(n int) string {
	b := make([]byte, 0, 96+16*n)
	b = append(b, "INSERT INTO messages (seq, id, session_id, parent_id, parent_seq, run_start, run_parent, role, content, created_at, metadata) VALUES "...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "(?,?,?,?,?,?,?,?,?,?,?)"...)
	}
	return string(b)
}

const messageColumns = `id, session_id, coalesce(parent_id, ''), role, content, created_at, metadata`

func scanMessage(r scanner) (sessions.Message, error) {
	var (
		m       sessions.Message
		created int64
		meta    sql.NullString
	)
	if err := r.Scan(&m.ID, &m.SessionID, &m.ParentID, &m.Role, &m.Content, &created, &meta); err != nil {
		return sessions.Message{}, err
	}
	m.CreatedAt = fromMicros(created)
	if meta.Valid && meta.String != "" {
		m.Metadata = []byte(meta.String)
	}
	return m, nil
}

// GetMessage implements [sessions.Store].
func (s *Store) GetMessage(ctx context.Context, id string) (sessions.Message, error) {
	return rowerr.Get("message", id, sql.ErrNoRows, func() (sessions.Message, error) {
		return scanMessage(s.r.QueryRowContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE id = ?`, id))
	})
}

// Branch implements [sessions.Store]. A recursive query walks from the
// head's run to the root's, one step per run (see the messages table);
// then each run is read as one range of keys, straight into its place in
// the result.
func (s *Store) Branch(ctx context.Context, sessionID string) ([]sessions.Message, error) {
	if sessions.HasNUL(sessionID) {
		return nil, fmt.Errorf("session: %w", sessions.ErrNotFound)
	}
	var out []sessions.Message
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		spans, err := branchRuns(ctx, tx, sessionID)
		if err != nil || len(spans) == 0 {
			return err
		}
		// Runs are head first; the result is root first. off[k] is where
		// run k starts in the result.
		off := make([]int64, len(spans))
		total := int64(0)
		for k := len(spans) - 1; k >= 0; k-- {
			off[k] = total
			total += spans[k][1] - spans[k][0] + 1
		}
		js, err := json.Marshal(spans)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT j.key, m.seq, m.id, coalesce(m.parent_id, ''), m.role, m.content, m.created_at, m.metadata
			FROM json_each(?) j CROSS JOIN messages m ON m.seq BETWEEN j.value ->> 0 AND j.value ->> 1`, string(js))
		if err != nil {
			return err
		}
		defer rows.Close()
		out = make([]sessions.Message, total)
		filled := int64(0)
		for rows.Next() {
			var (
				k, seq  int64
				role    string
				created int64
				meta    []byte
				m       = sessions.Message{SessionID: sessionID}
			)
			if err := rows.Scan(&k, &seq, &m.ID, &m.ParentID, &role, &m.Content, &created, &meta); err != nil {
				return err
			}
			if k < 0 || k >= int64(len(spans)) || seq < spans[k][0] || seq > spans[k][1] || out[off[k]+seq-spans[k][0]].ID != "" {
				return fmt.Errorf("message %q (key %d) outside its run: the tree is inconsistent", m.ID, seq)
			}
			m.Role, m.CreatedAt = internRole(role), fromMicros(created)
			if len(meta) > 0 {
				m.Metadata = meta
			}
			out[off[k]+seq-spans[k][0]] = m
			filled++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if filled != total {
			return fmt.Errorf("%d of the %d messages of the branch are missing: the tree is inconsistent", total-filled, total)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("branch of session %q: %w", sessionID, err)
	}
	if out == nil {
		out = []sessions.Message{}
	}
	// The tree is enforced by foreign keys and the runs by CHECKs; verify
	// the chain anyway rather than ever return a wrong history.
	for i := 1; i < len(out); i++ {
		if out[i].ParentID != out[i-1].ID {
			return nil, fmt.Errorf("branch of session %q: message %q does not follow %q: the tree is inconsistent", sessionID, out[i].ID, out[i-1].ID)
		}
	}
	if len(out) > 0 && out[0].ParentID != "" {
		return nil, fmt.Errorf("branch of session %q: parent %q of %q is missing: the tree is inconsistent", sessionID, out[0].ParentID, out[0].ID)
	}
	return out, nil
}

// branchRuns returns the [first, last] key ranges of the runs on the
// session's active branch, head first; ErrNotFound for an unknown session.
func branchRuns(ctx context.Context, tx *sql.Tx, sessionID string) ([][2]int64, error) {
	rows, err := tx.QueryContext(ctx, `WITH RECURSIVE runs (lo, hi, up) AS (
			SELECT m.run_start, m.seq, m.run_parent FROM sessions s JOIN messages m ON m.id = s.head_id WHERE s.id = ?1
			UNION ALL
			SELECT p.run_start, p.seq, p.run_parent FROM runs r JOIN messages p ON p.seq = r.up
		)
		SELECT lo, hi FROM runs`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var spans [][2]int64
	for rows.Next() {
		var sp [2]int64
		if err := rows.Scan(&sp[0], &sp[1]); err != nil {
			return nil, err
		}
		if sp[0] > sp[1] || (len(spans) > 0 && sp[1] >= spans[len(spans)-1][0]) {
			return nil, fmt.Errorf("run [%d, %d] out of order: the tree is inconsistent", sp[0], sp[1])
		}
		spans = append(spans, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(spans) > 0 {
		return spans, nil
	}
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, sessionID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, sessions.ErrNotFound
	}
	return nil, err
}

// SetHead implements [sessions.Store].
func (s *Store) SetHead(ctx context.Context, sessionID, messageID string) error {
	if sessions.HasNUL(sessionID, messageID) {
		return fmt.Errorf("session or message: %w", sessions.ErrNotFound)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE sessions SET head_id = ?1, updated_at = max(updated_at, ?2)
		WHERE id = ?3 AND EXISTS (SELECT 1 FROM messages WHERE id = ?1 AND session_id = ?3)`,
		messageID, nowMicros(), sessionID)
	return oneRow(fmt.Sprintf("set head of session %q to %q", sessionID, messageID),
		fmt.Errorf("session or message of that session: %w", sessions.ErrNotFound), res, err)
}

// BranchBefore implements [sessions.Store]: a recursive query follows the
// parent keys from the page's newest message, one primary-key lookup per
// message, and stops after limit.
func (s *Store) BranchBefore(ctx context.Context, sessionID, beforeID string, limit int) ([]sessions.Message, error) {
	if err := input.BranchBefore(sessionID, beforeID, limit); err != nil {
		return nil, err
	}
	var page []sessions.Message
	err := s.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `WITH RECURSIVE chain (seq, up, n) AS (
				SELECT m.seq, m.parent_seq, 1 FROM messages m
				WHERE m.session_id = ?1 AND m.seq = CASE WHEN ?2 = ''
					THEN (SELECT h.seq FROM sessions s JOIN messages h ON h.id = s.head_id WHERE s.id = ?1)
					ELSE (SELECT b.parent_seq FROM messages b WHERE b.id = ?2 AND b.session_id = ?1) END
				UNION ALL
				SELECT p.seq, p.parent_seq, c.n + 1 FROM chain c JOIN messages p ON p.seq = c.up WHERE c.n < ?3
			)
			SELECT m.id, coalesce(m.parent_id, ''), m.role, m.content, m.created_at, m.metadata
			FROM chain c JOIN messages m ON m.seq = c.seq ORDER BY c.n`, sessionID, beforeID, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				role    string
				created int64
				meta    []byte
				m       = sessions.Message{SessionID: sessionID}
			)
			if err := rows.Scan(&m.ID, &m.ParentID, &role, &m.Content, &created, &meta); err != nil {
				return err
			}
			m.Role, m.CreatedAt = internRole(role), fromMicros(created)
			if len(meta) > 0 {
				m.Metadata = meta
			}
			page = append(page, m)
		}
		if err := rows.Err(); err != nil || len(page) > 0 {
			return err
		}
		var session, before bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1),
				?2 = '' OR EXISTS (SELECT 1 FROM messages WHERE id = ?2 AND session_id = ?1)`, sessionID, beforeID).Scan(&session, &before); err != nil {
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
