package authz

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
)

// Speaker is one party that talks to the runtime, with everything the gate
// knows about it: its authority, where its calls come from (source), its
// permission mode, the permission rules, its working directories and the
// state directory no speaker's tool may write.
//
// Only this package makes a Speaker ([NewMCPClient], [NewOwner]), and it
// checks every field once, there. Everything downstream (the gate, the turn
// loop, the tools, the MCP service) holds the value whole and never re-checks
// or copies a field of it: a zero Speaker, or one that did not come from a
// constructor, is refused wherever it is used ([Speaker.Valid] is false and
// [Decide] denies every call).
type Speaker struct {
	authority Authority
	source    string
	mode      string
	rules     Rules
	workDirs  []string
	stateDir  string
	log       *slog.Logger
	// made is set by the constructors alone (pgx's createdByParseConfig):
	// the zero value is no speaker.
	made bool
}

// Scope is where a speaker acts: the permission rules (tools.permission_rules,
// from [ParseRules]), the absolute working directories (relative tool paths
// resolve against the first; with none, a constrained speaker cannot write)
// and the absolute state directory, which no speaker's tool ever writes
// wherever it is ("" means only the names .openprogram and
// .openprogram-<profile> protect it).
type Scope struct {
	Rules    Rules
	WorkDirs []string
	StateDir string
}

// ErrInvalidSpeaker is wrapped by every error of the constructors, and by
// the errors consumers return for a Speaker that is not [Speaker.Valid]. A
// malformed client id or principal id is also an [ErrInvalidAuthority].
var ErrInvalidSpeaker = errors.New("invalid speaker")

// NewMCPClient returns the speaker of the MCP client with clientID (the
// token fingerprint, 16 lowercase hex characters) under the install's owner
// principal: source mcp, permission mode ask, and the fixed authority of
// docs/contract.md section 3 (speaker mcp/<clientID>, "MCP client", tier
// paired, non-interactive). Nothing a client sends can change it. An empty
// or malformed id is an error: an identity is never made up.
func NewMCPClient(clientID, principalID string, at Scope) (Speaker, error) {
	a, err := mcpClientAuthority(clientID, principalID)
	if err != nil {
		return Speaker{}, fmt.Errorf("%w: %w", ErrInvalidSpeaker, err)
	}
	return newSpeaker(a, SourceMCP, ModeAsk, at)
}

// NewOwner returns the speaker of the install's owner at the console:
// source cli, permission mode ask, the owner tier, speaker "owner".
// interactive is a person at a terminal who answers approval questions
// (`chat`); false denies at once what would need an approval (`prompt`).
func NewOwner(principalID string, interactive bool, at Scope) (Speaker, error) {
	a, err := ownerAuthority(principalID)
	if err != nil {
		return Speaker{}, fmt.Errorf("%w: %w", ErrInvalidSpeaker, err)
	}
	if !interactive {
		a.Interaction = InteractionNonInteractive
	}
	return newSpeaker(a, SourceCLI, ModeAsk, at)
}

// newSpeaker is the one place a Speaker is made: it checks every field.
func newSpeaker(a Authority, source, mode string, at Scope) (Speaker, error) {
	bad := func(format string, args ...any) (Speaker, error) {
		return Speaker{}, fmt.Errorf("%w: %s", ErrInvalidSpeaker, fmt.Sprintf(format, args...))
	}
	if err := a.validate(); err != nil {
		return Speaker{}, fmt.Errorf("%w: %w", ErrInvalidSpeaker, err)
	}
	switch source {
	case SourceMCP, SourceAgentSpawn:
	case SourceCLI:
		if a.SpeakerKind != SpeakerKindOwner {
			return bad("source %q is only for the owner, not speaker kind %q", SourceCLI, a.SpeakerKind)
		}
	default:
		return bad("source %q is not %q, %q or %q", source, SourceMCP, SourceAgentSpawn, SourceCLI)
	}
	if a.SpeakerKind == SpeakerKindClient && source != SourceMCP {
		return bad("an MCP client speaks with source %q only", SourceMCP)
	}
	switch mode {
	case ModeAsk, ModeBypass:
	default:
		return bad("permission mode %q is not %q or %q", mode, ModeAsk, ModeBypass)
	}
	for _, d := range at.WorkDirs {
		if !filepath.IsAbs(d) || strings.IndexByte(d, 0) >= 0 {
			return bad("working directory %q is not an absolute path", show(d))
		}
	}
	if at.StateDir != "" && (!filepath.IsAbs(at.StateDir) || strings.IndexByte(at.StateDir, 0) >= 0) {
		return bad("state directory %q is not an absolute path", show(at.StateDir))
	}
	return Speaker{
		authority: a, source: source, mode: mode, rules: at.Rules,
		workDirs: slices.Clone(at.WorkDirs), stateDir: at.StateDir, made: true,
	}, nil
}

// Valid reports whether sp was made by a constructor of this package. Every
// consumer refuses a speaker that is not.
func (sp Speaker) Valid() bool { return sp.made }

// Check returns nil for a valid speaker, else an error wrapping
// [ErrInvalidSpeaker] that says how to make one.
func (sp Speaker) Check() error {
	if sp.made {
		return nil
	}
	return fmt.Errorf("%w: not made by authz.NewMCPClient or authz.NewOwner", ErrInvalidSpeaker)
}

// Authority returns the speaker's authority (a copy).
func (sp Speaker) Authority() Authority { return sp.authority }

// Source returns where the speaker's calls come from: [SourceMCP] or
// [SourceCLI].
func (sp Speaker) Source() string { return sp.source }

// Mode returns the permission mode, [ModeAsk] for every speaker the
// constructors make.
func (sp Speaker) Mode() string { return sp.mode }

// Rules returns the permission rules.
func (sp Speaker) Rules() Rules { return sp.rules }

// WorkDirs returns the absolute working directories (a copy).
func (sp Speaker) WorkDirs() []string { return slices.Clone(sp.workDirs) }

// StateDir returns the absolute state directory, or "".
func (sp Speaker) StateDir() string { return sp.stateDir }

// Interactive reports whether a person can answer the speaker's approval
// questions now: the owner in `chat`, nobody else.
func (sp Speaker) Interactive() bool {
	return sp.made && !IsConstrained(sp.source) && sp.authority.Interaction == InteractionInteractive
}

// IsOwner reports whether sp is the owner's speaker (source cli, the owner
// tier), the one speaker that may hold standing approvals.
func (sp Speaker) IsOwner() bool {
	return sp.made && sp.source == SourceCLI && sp.authority.IsOwner()
}

// ClientID returns the MCP client id of an MCP client's speaker, and false
// for any other speaker.
func (sp Speaker) ClientID() (string, bool) {
	if !sp.made || sp.authority.SpeakerKind != SpeakerKindClient {
		return "", false
	}
	return strings.TrimPrefix(sp.authority.SpeakerID, mcpSpeakerPrefix), true
}

// ID returns the speaker id: "mcp/<client id>" or "owner". It is the origin
// of the speaker's audit records.
func (sp Speaker) ID() string { return sp.authority.SpeakerID }

// WithLogger returns sp with log receiving, at debug level, the full
// resolution behind a path denial (resolved path, symlink targets), which a
// denial's text never holds. Nil discards.
func (sp Speaker) WithLogger(log *slog.Logger) Speaker {
	sp.log = log
	return sp
}

// Logger returns the logger of [Speaker.WithLogger], or nil.
func (sp Speaker) Logger() *slog.Logger { return sp.log }
