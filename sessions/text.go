package sessions

import (
	"fmt"
	"strings"
)

// CheckText is the store's boundary check for text: fields alternate a
// field name and its value, and the first value holding U+0000 makes an
// error wrapping [ErrInvalidText] that names its field. Every backend calls
// it before any write, so SQLite and PostgreSQL refuse the same inputs.
func CheckText(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if strings.IndexByte(fields[i+1], 0) >= 0 {
			return fmt.Errorf("%w: %s", ErrInvalidText, fields[i])
		}
	}
	return nil
}

// HasNUL reports whether any of ss holds U+0000. No stored id, path or
// prefix does, so backends answer a read of one with [ErrNotFound] (or no
// hits) without asking the database.
func HasNUL(ss ...string) bool {
	for _, s := range ss {
		if strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
	return false
}

// checkText checks the text fields of a source's authority.
func (a SourceAuthority) checkText() error {
	return CheckText("speaker_kind", a.SpeakerKind, "speaker_id", a.SpeakerID, "speaker_display", a.SpeakerDisplay,
		"principal_id", a.PrincipalID, "authority_tier", a.Tier, "interaction", a.Interaction, "source", a.Source)
}

// CheckText checks every text field of s with [CheckText].
func (s Session) CheckText() error {
	return CheckText("session id", s.ID, "agent id", s.AgentID, "title", s.Title, "source", s.Source)
}

// CheckText checks the path, content and authority of src with [CheckText].
func (src NewSource) CheckText() error {
	if err := CheckText("memory path", src.Path, "memory content", src.Content); err != nil {
		return err
	}
	return src.Authority.checkText()
}

// CheckText checks the type, origin and session id of r with [CheckText].
func (r NewAuditRecord) CheckText() error {
	return CheckText("audit type", r.Type, "audit origin", r.Origin, "audit session id", r.SessionID)
}

// CheckMessages checks the role and content of every message with
// [CheckText].
func CheckMessages(msgs []NewMessage) error {
	for _, m := range msgs {
		if err := CheckText("message role", m.Role, "message content", m.Content); err != nil {
			return err
		}
	}
	return nil
}
