package authz

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/openprogram/openprogram/internal/clip"
)

// Interaction values of [Authority.Interaction].
const (
	// InteractionInteractive: a person can answer an approval question now.
	InteractionInteractive = "interactive"
	// InteractionNonInteractive: nobody can answer; approvals are denied at once.
	InteractionNonInteractive = "non-interactive"
)

// Speaker kinds. "owner" and "client" have fixed shapes, the ones [NewOwner] and
// [NewMCPClient] make; no exported constructor makes an "agent" speaker.
const (
	SpeakerKindOwner  = "owner"
	SpeakerKindClient = "client"
	SpeakerKindAgent  = "agent"
)

// Authority holds the six authority fields of a speaker. It is data: a
// [Speaker] holds the one its constructor checked ([Speaker.Authority]
// returns it), and records and events carry copies of it. Nothing grants
// anything to an Authority on its own.
type Authority struct {
	SpeakerKind    string `json:"speaker_kind"`
	SpeakerID      string `json:"speaker_id"`
	SpeakerDisplay string `json:"speaker_display"`
	PrincipalID    string `json:"principal_id"`
	Tier           Tier   `json:"authority_tier"`
	Interaction    string `json:"interaction"`
}

// ErrInvalidAuthority is wrapped by the errors of [NewMCPClient] and
// [NewOwner] about the authority: a client id or principal id that is
// malformed.
var ErrInvalidAuthority = errors.New("invalid authority")

const (
	mcpSpeakerPrefix   = "mcp/"
	mcpSpeakerDisplay  = "MCP client"
	ownerSpeakerID     = "owner"
	ownerDisplay       = "Owner"
	principalPrefix    = "owner/install/"
	maxAuthorityString = 256
)

// IsClientID reports whether s is a client id: exactly 16 lowercase hex characters.
func IsClientID(s string) bool { return isHex16(s) }

// IsPrincipalID reports whether s is an owner principal id: "owner/install/" followed
// by exactly 16 lowercase hex characters.
func IsPrincipalID(s string) bool {
	rest, ok := strings.CutPrefix(s, principalPrefix)
	return ok && isHex16(rest)
}

func isHex16(s string) bool {
	if len(s) != 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// mcpClientAuthority returns the fixed authority of an MCP client (docs/contract.md section 3):
// speaker_kind "client", speaker_id "mcp/<clientID>", speaker_display "MCP client",
// the given principal, tier paired, non-interactive. It never makes an identity up: an
// empty or malformed client id (not 16 lowercase hex) or principal id is an error.
func mcpClientAuthority(clientID, principalID string) (Authority, error) {
	if !IsClientID(clientID) {
		return Authority{}, fmt.Errorf("%w: client id must be 16 lowercase hex characters (got %d bytes); authenticate the client first", ErrInvalidAuthority, len(clientID))
	}
	if !IsPrincipalID(principalID) {
		return Authority{}, fmt.Errorf("%w: principal id %q is not owner/install/<16 hex>; load it with LoadOrCreateOwnerPrincipal", ErrInvalidAuthority, clip.String(principalID, msgClip))
	}
	return Authority{
		SpeakerKind:    SpeakerKindClient,
		SpeakerID:      mcpSpeakerPrefix + clientID,
		SpeakerDisplay: mcpSpeakerDisplay,
		PrincipalID:    principalID,
		Tier:           TierPaired,
		Interaction:    InteractionNonInteractive,
	}, nil
}

// ownerAuthority returns the authority of the install's owner speaking interactively:
// speaker_kind "owner", speaker_id "owner", speaker_display "Owner", tier owner.
func ownerAuthority(principalID string) (Authority, error) {
	if !IsPrincipalID(principalID) {
		return Authority{}, fmt.Errorf("%w: principal id %q is not owner/install/<16 hex>; load it with LoadOrCreateOwnerPrincipal", ErrInvalidAuthority, clip.String(principalID, msgClip))
	}
	return Authority{
		SpeakerKind:    SpeakerKindOwner,
		SpeakerID:      ownerSpeakerID,
		SpeakerDisplay: ownerDisplay,
		PrincipalID:    principalID,
		Tier:           TierOwner,
		Interaction:    InteractionInteractive,
	}, nil
}

// IsOwner reports whether a is the owner's: the owner's speaker kind and
// the owner's tier. It is the one rule for a speaker ([Speaker.IsOwner])
// and for an authority stored with a message.
func (a Authority) IsOwner() bool {
	return a.SpeakerKind == SpeakerKindOwner && a.Tier == TierOwner
}

// validate reports whether a is well formed: every field set, no control characters,
// a known tier and interaction, a valid principal id; speaker_kind is lowercase
// letters and underscores. Two kinds have fixed shapes: "client" must be exactly what
// mcpClientAuthority returns (so a client can never hold the owner tier or be
// interactive), and "owner" must have speaker_id "owner" and the owner tier. The
// speaker constructor runs it, once; nothing else does.
func (a Authority) validate() error {
	if a.SpeakerKind == "" || strings.TrimFunc(a.SpeakerKind, func(r rune) bool { return r == '_' || (r >= 'a' && r <= 'z') }) != "" {
		return fmt.Errorf("%w: speaker_kind %q must be lowercase letters", ErrInvalidAuthority, clip.String(a.SpeakerKind, msgClip))
	}
	for _, f := range []struct{ name, v string }{{"speaker_id", a.SpeakerID}, {"speaker_display", a.SpeakerDisplay}} {
		if err := checkText(f.v); err != nil {
			return fmt.Errorf("%w: %s %w", ErrInvalidAuthority, f.name, err)
		}
	}
	if !IsPrincipalID(a.PrincipalID) {
		return fmt.Errorf("%w: principal_id %q is not owner/install/<16 hex>", ErrInvalidAuthority, clip.String(a.PrincipalID, msgClip))
	}
	if !a.Tier.Valid() {
		return fmt.Errorf("%w: unknown authority_tier %q", ErrInvalidAuthority, clip.String(string(a.Tier), msgClip))
	}
	if a.Interaction != InteractionInteractive && a.Interaction != InteractionNonInteractive {
		return fmt.Errorf("%w: interaction %q must be %q or %q", ErrInvalidAuthority, clip.String(a.Interaction, msgClip), InteractionInteractive, InteractionNonInteractive)
	}
	switch a.SpeakerKind {
	case SpeakerKindClient:
		id, ok := strings.CutPrefix(a.SpeakerID, mcpSpeakerPrefix)
		if !ok || !IsClientID(id) {
			return fmt.Errorf("%w: client speaker_id %q must be mcp/<16 hex>", ErrInvalidAuthority, clip.String(a.SpeakerID, msgClip))
		}
		if want, _ := mcpClientAuthority(id, a.PrincipalID); a != want {
			return fmt.Errorf("%w: a client authority must be display %q, tier %q, %s", ErrInvalidAuthority, mcpSpeakerDisplay, TierPaired, InteractionNonInteractive)
		}
	case SpeakerKindOwner:
		if a.SpeakerID != ownerSpeakerID || a.Tier != TierOwner {
			return fmt.Errorf("%w: an owner authority must have speaker_id %q and tier %q", ErrInvalidAuthority, ownerSpeakerID, TierOwner)
		}
	}
	return nil
}

func checkText(s string) error {
	switch {
	case s == "":
		return errors.New("is empty")
	case len(s) > maxAuthorityString:
		return fmt.Errorf("is longer than %d bytes", maxAuthorityString)
	case !utf8.ValidString(s):
		return errors.New("is not valid UTF-8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return errors.New("contains control characters")
	}
	return nil
}

// msgClip is how much of a caller-supplied value authz messages show.
const msgClip = 64
