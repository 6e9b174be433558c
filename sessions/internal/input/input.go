// Package input holds the checks every store backend makes of a write's
// input before it touches the database, so that SQLite and PostgreSQL
// refuse the same inputs with the same errors; and, for the standing
// approvals, the whole rule around each backend's SQL.
package input

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/openprogram/openprogram/sessions"
)

// Append checks the input of [sessions.Store.AppendMessages]: ids that can
// name a row, at least one message, storable text, a known role and
// metadata that is empty or JSON.
func Append(sessionID, parentID string, msgs []sessions.NewMessage) error {
	if sessions.HasNUL(sessionID, parentID) {
		return fmt.Errorf("session or parent: %w", sessions.ErrNotFound)
	}
	if err := sessions.CheckMessages(msgs); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return fmt.Errorf("append messages to session %q: no messages", sessionID)
	}
	for i, m := range msgs {
		switch m.Role {
		case sessions.RoleUser, sessions.RoleAssistant, sessions.RoleTool, sessions.RoleSystem:
		default:
			return fmt.Errorf("append messages to session %q: message %d has role %q, want user, assistant, tool or system", sessionID, i, m.Role)
		}
		if len(m.Metadata) > 0 && !json.Valid(m.Metadata) {
			return fmt.Errorf("append messages to session %q: message %d metadata is not valid JSON", sessionID, i)
		}
	}
	return nil
}

// Update checks the input of [sessions.Store.UpdateSession].
func Update(id string, u sessions.SessionUpdate) error {
	if sessions.HasNUL(id) {
		return fmt.Errorf("session: %w", sessions.ErrNotFound)
	}
	if u.Title != nil {
		if err := sessions.CheckText("title", *u.Title); err != nil {
			return err
		}
	}
	return nil
}

// Allow is [sessions.Store.AllowForSession] around write, the backend's
// SQL: it checks the input, has write store the authority as the JSON both
// backends keep in granted_by (found: the session exists, whether or not
// the tool was allowed before), and says what came of it.
func Allow(sessionID, tool string, by sessions.SourceAuthority, write func(granted string) (found bool, err error)) error {
	if err := sessions.CheckAllowance(tool); err != nil {
		return fmt.Errorf("allow a tool for session %q: %w", sessionID, err)
	}
	if sessions.HasNUL(sessionID) {
		return fmt.Errorf("allow %q for a session: %w", tool, sessions.ErrNotFound)
	}
	granted, err := json.Marshal(by)
	if err != nil {
		return fmt.Errorf("allow %q for session %q: encode the authority: %w", tool, sessionID, err)
	}
	found, err := write(string(granted))
	if err == nil && !found {
		err = sessions.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("allow %q for session %q: %w", tool, sessionID, err)
	}
	return nil
}

// Allowances is [sessions.Store.SessionAllowances] around read, the
// backend's SQL (tool names in order): none, never nil, for a session id
// that names no row.
func Allowances(sessionID string, read func() ([]string, error)) ([]string, error) {
	if sessions.HasNUL(sessionID) {
		return []string{}, nil
	}
	out, err := read()
	if err != nil {
		return nil, fmt.Errorf("read the standing approvals of session %q: %w", sessionID, err)
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

// BranchBefore checks the input of [sessions.Store.BranchBefore].
func BranchBefore(sessionID, beforeID string, limit int) error {
	if sessions.HasNUL(sessionID, beforeID) {
		return fmt.Errorf("session or message: %w", sessions.ErrNotFound)
	}
	if limit < 1 {
		return fmt.Errorf("read the branch of session %q: page limit %d, want at least 1", sessionID, limit)
	}
	return nil
}

// Chain turns a page of [sessions.Store.BranchBefore] read newest first
// into its result, root first, after checking that each message is the
// parent of the one read before it: the stores enforce the tree, but a
// wrong history must never be returned.
func Chain(sessionID string, newestFirst []sessions.Message) ([]sessions.Message, error) {
	for i := 1; i < len(newestFirst); i++ {
		if newestFirst[i-1].ParentID != newestFirst[i].ID {
			return nil, fmt.Errorf("branch of session %q: message %q does not follow %q: the tree is inconsistent",
				sessionID, newestFirst[i-1].ID, newestFirst[i].ID)
		}
	}
	slices.Reverse(newestFirst)
	if newestFirst == nil {
		newestFirst = []sessions.Message{}
	}
	return newestFirst, nil
}
