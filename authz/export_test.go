package authz

import "log/slog"

// Request is, for tests only, the fields of a speaker in any shape the
// speaker constructor accepts (agent speakers, bypass mode), and some it
// refuses: [Request.Speaker] makes the speaker the one way there is.
type Request struct {
	Source         string
	PermissionMode string // "" means ModeAsk
	Authority      Authority
	Rules          []Rule
	WorkDirs       []string
	StateDir       string
	Logger         *slog.Logger
}

// Speaker makes r's speaker through the constructor's checks.
func (r Request) Speaker() (Speaker, error) {
	rules, err := NewRules(r.Rules...)
	if err != nil {
		return Speaker{}, err
	}
	mode := r.PermissionMode
	if mode == "" {
		mode = ModeAsk
	}
	sp, err := newSpeaker(r.Authority, r.Source, mode, Scope{Rules: rules, WorkDirs: r.WorkDirs, StateDir: r.StateDir})
	return sp.WithLogger(r.Logger), err
}

// MCPClientAuthority and OwnerAuthority are the two fixed authorities, for
// tests that build speakers of other shapes from them.
var (
	MCPClientAuthority = mcpClientAuthority
	OwnerAuthority     = ownerAuthority
)

// Validate is validate, for the authority tests.
func (a Authority) Validate() error { return a.validate() }

// Validate reports whether r compiles, for the rule tests.
func (r Rule) Validate() error {
	_, err := compileRule(r)
	return err
}
