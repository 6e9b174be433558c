// Package input holds the checks every store backend makes of a write's
// input before it touches the database, so that SQLite and PostgreSQL
// refuse the same inputs with the same errors.
package input

import (
	"encoding/json"
	"fmt"

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

// Allow checks the input of [sessions.Store.AllowForSession] and returns
// the authority as the JSON both backends store in granted_by.
func Allow(sessionID, tool string, by sessions.SourceAuthority) ([]byte, error) {
	if err := sessions.CheckAllowance(tool); err != nil {
		return nil, fmt.Errorf("allow a tool for session %q: %w", sessionID, err)
	}
	if sessions.HasNUL(sessionID) {
		return nil, fmt.Errorf("allow %q for a session: %w", tool, sessions.ErrNotFound)
	}
	granted, err := json.Marshal(by)
	if err != nil {
		return nil, fmt.Errorf("allow %q for session %q: encode the authority: %w", tool, sessionID, err)
	}
	return granted, nil
}
