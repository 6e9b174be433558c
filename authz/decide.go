package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/openprogram/openprogram/internal/clip"
)

// Sources of a request. Only [SourceCLI] is trusted as a person at a terminal; every
// other value, including unknown ones, is constrained (hard constraints apply) and
// non-interactive.
const (
	SourceMCP        = "mcp"
	SourceAgentSpawn = "agent_spawn"
	SourceCLI        = "cli"
)

// IsConstrained reports whether calls from source meet the hard constraints: every
// source but [SourceCLI], including "" and unknown ones.
func IsConstrained(source string) bool { return source != SourceCLI }

// Permission modes. Bypass only skips the approval question of step 5 for an
// interactive speaker; it never skips hard constraints, capabilities or rules.
const (
	ModeAsk    = "ask"
	ModeBypass = "bypass"
)

// Reason codes of a denial.
const (
	ReasonHardConstraint      = "HARD_CONSTRAINT_DENIED"
	ReasonCapability          = "AUTHORITY_CAPABILITY_DENIED"
	ReasonRuleDeny            = "PERMISSION_RULE_DENY"
	ReasonApprovalUnavailable = "APPROVAL_UNAVAILABLE_NON_INTERACTIVE"
	ReasonApprovalRequired    = "APPROVAL_REQUIRED"
)

// Request is everything the gate knows about a caller. No field widens authority beyond
// Authority.Tier: Source and Authority.Interaction can only make the gate stricter.
type Request struct {
	// Source is where the call comes from: SourceMCP, SourceAgentSpawn or SourceCLI.
	// Anything else is treated like SourceMCP.
	Source string
	// PermissionMode is ModeAsk or ModeBypass; anything else means ModeAsk.
	PermissionMode string
	// Authority is the speaker. An authority that fails Validate holds no capability.
	Authority Authority
	// Rules are the permission rules. A malformed rule denies every call.
	Rules []Rule
	// WorkDirs are the absolute working directories; relative tool paths resolve against
	// WorkDirs[0]. With none, constrained sources cannot write at all.
	WorkDirs []string
	// StateDir is the absolute state directory ($OPENPROGRAM_HOME or its default). It
	// is a protected directory for constrained sources wherever it is. Empty: only the
	// names .openprogram and .openprogram-<profile> protect it.
	StateDir string
	// Logger receives, at debug level, the full resolution behind a path denial
	// (resolved path, symlink targets), which the denial text never holds. Nil
	// discards.
	Logger *slog.Logger
}

// Decision is the gate's verdict on one call.
type Decision struct {
	// Allowed reports that the tool may run now.
	Allowed bool
	// NeedsApproval reports that the tool may run once the speaker approves. Only set
	// for interactive speakers whose tier holds approval.request; Allowed is false.
	NeedsApproval bool
	// ReasonCode is one of the Reason constants, "" when allowed.
	ReasonCode string
	// Capability is the capability the tool needs.
	Capability Capability
	// Message explains the verdict to a person or a model. It names the tool, the
	// capability, the rule or a path, never an argument value such as a command.
	Message string
}

// Decide runs the gate of docs/contract.md section 3 for one call of tool with args (a JSON
// object; empty or null means {}). First match wins:
//
//  1. hard constraints, for every source but SourceCLI;
//  2. the authority tier must hold the tool's capability;
//  3. permission rules: deny, then ask;
//  4. an allow rule or a safe tool runs;
//  5. otherwise approval: denied at once when non-interactive, allowed in bypass mode,
//     else NeedsApproval.
//
// Decide never reads or changes anything but the filesystem metadata needed to resolve
// paths, and it never panics.
func Decide(req Request, tool string, args json.RawMessage) Decision {
	return DecideTool(req, tool, "", args)
}

// DecideTool is [Decide] for a tool that declares the capability it needs
// (a runtime tool's Capability): step 2 then also requires the tier to
// hold declared ([ToolAllowed]). Decision.Capability stays the table's.
func DecideTool(req Request, tool string, declared Capability, args json.RawMessage) Decision {
	capab := ToolCapability(tool)
	constrained := IsConstrained(req.Source)
	nonInteractive := constrained || req.Authority.Interaction != InteractionInteractive

	if msg := hardConstraint(req, tool, args, constrained); msg != "" {
		return deny(ReasonHardConstraint, capab, "hard constraint: "+msg)
	}

	if err := req.Authority.Validate(); err != nil {
		return deny(ReasonCapability, capab, fmt.Sprintf("authority is invalid, so it does not allow %s: %v", capab, err))
	}
	if missing, ok := ToolAllowed(req.Authority.Tier, tool, declared); !ok {
		return deny(ReasonCapability, missing, fmt.Sprintf("authority tier %s does not allow %s", show(string(req.Authority.Tier)), missing))
	}

	var denyRule, askRule, allowRule *Rule
	if len(req.Rules) > 0 {
		subj := makeSubject(req, tool, args)
		for i := range req.Rules {
			c, err := compileRule(req.Rules[i])
			if err != nil {
				return deny(ReasonRuleDeny, capab, fmt.Sprintf("permission rule %d is malformed, so every call is denied until it is fixed: %v", i, err))
			}
			if !c.matches(tool, subj) {
				continue
			}
			r := &req.Rules[i]
			switch r.Action {
			case ActionDeny:
				if denyRule == nil {
					denyRule = r
				}
			case ActionAsk:
				if askRule == nil {
					askRule = r
				}
			case ActionAllow:
				if allowRule == nil {
					allowRule = r
				}
			}
		}
	}
	name := show(clip.String(tool, msgClip))
	if denyRule != nil {
		return deny(ReasonRuleDeny, capab, fmt.Sprintf("permission rule %s denies %s", denyRule, name))
	}
	if askRule != nil {
		return approval(req, nonInteractive, capab, fmt.Sprintf("permission rule %s asks before %s", askRule, name))
	}
	if allowRule != nil {
		return Decision{Allowed: true, Capability: capab, Message: fmt.Sprintf("allowed: permission rule %s allows %s", allowRule, name)}
	}
	if IsSafeTool(tool) {
		return Decision{Allowed: true, Capability: capab, Message: fmt.Sprintf("allowed: %s is a safe tool", name)}
	}
	if !nonInteractive && req.PermissionMode == ModeBypass && req.Authority.Tier.Has(CapApprovalRequest) {
		return Decision{Allowed: true, Capability: capab, Message: fmt.Sprintf("allowed: %s runs without approval in bypass mode", name)}
	}
	return approval(req, nonInteractive, capab, fmt.Sprintf("%s needs approval", name))
}

// approval turns "needs approval" into NeedsApproval or a denial.
func approval(req Request, nonInteractive bool, capab Capability, why string) Decision {
	switch {
	case nonInteractive && req.Source == SourceCLI:
		return deny(ReasonApprovalUnavailable, capab, fmt.Sprintf("approval unavailable: %s, and speaker %s is non-interactive", why, show(clip.String(req.Authority.SpeakerID, msgClip))))
	case nonInteractive:
		src := req.Source
		if src == "" {
			src = "(none)"
		}
		return deny(ReasonApprovalUnavailable, capab, fmt.Sprintf("approval unavailable: %s, and source %s is non-interactive", why, show(clip.String(src, msgClip))))
	case !req.Authority.Tier.Has(CapApprovalRequest):
		return deny(ReasonApprovalUnavailable, capab, fmt.Sprintf("approval unavailable: %s, and authority tier %s cannot request approval", why, show(string(req.Authority.Tier))))
	}
	return Decision{NeedsApproval: true, ReasonCode: ReasonApprovalRequired, Capability: capab, Message: "approval required: " + why}
}

func deny(code string, capab Capability, msg string) Decision {
	return Decision{ReasonCode: code, Capability: capab, Message: msg}
}

// riskyTools are never run for a constrained source (compared case-insensitively).
var riskyTools = map[string]bool{"bash": true, "exec": true, "shell": true, "execute_code": true, "process": true}

// IsRiskyTool reports whether tool is one of the hard-constrained risky tools (bash,
// exec, shell, execute_code, process) or a worktree tool (worktree, worktree_*), in any
// letter case. Constrained sources can never run them.
func IsRiskyTool(tool string) bool {
	l := strings.ToLower(tool)
	return riskyTools[l] || l == "worktree" || strings.HasPrefix(l, "worktree_")
}

// hardConstraint returns why the call may not be made whatever the tier and
// the rules say, or "". For a constrained source: a risky tool, or a write
// that [Request.WriteTarget] refuses. For the owner's console: a write into
// the state directory or a dangerous path ([Request.WriteTarget] again); a
// write outside the working directories is left to the approval and then
// the file tool, which refuses it.
func hardConstraint(req Request, tool string, args json.RawMessage, constrained bool) string {
	src := req.Source
	if src == "" {
		src = "(none)"
	}
	name := show(clip.String(tool, msgClip))
	if constrained && IsRiskyTool(tool) {
		return fmt.Sprintf("%s is not allowed for source %s", name, show(clip.String(src, msgClip)))
	}
	var targets []string
	switch l := strings.ToLower(tool); l {
	case "write", "edit", "apply_patch":
		obj, err := decodeArgs(args)
		if err != nil {
			return unless(constrained, fmt.Sprintf("%s arguments are not a valid JSON object: %v", name, err))
		}
		if l == "apply_patch" {
			patch, err := argString(obj, "patch")
			if err != nil {
				return unless(constrained, fmt.Sprintf("%s needs one string %q argument: %v", name, "patch", err))
			}
			targets, err = PatchTargets(patch)
			if err != nil {
				return unless(constrained, fmt.Sprintf("%s patch cannot be checked: %v", name, err))
			}
		} else {
			p, err := argString(obj, "path")
			if err != nil {
				return unless(constrained, fmt.Sprintf("%s needs one non-empty string %q argument: %v", name, "path", err))
			}
			if p == "" {
				return unless(constrained, fmt.Sprintf("%s needs one non-empty string %q argument", name, "path"))
			}
			targets = []string{p}
		}
	default:
		return ""
	}
	if len(req.WorkDirs) == 0 {
		if !constrained {
			return ""
		}
		return fmt.Sprintf("%s cannot write: source %s has no working directory", name, show(clip.String(src, msgClip)))
	}
	for _, t := range targets {
		if _, err := req.WriteTarget(tool, t); err != nil {
			var pe *PathError
			if !errors.As(err, &pe) {
				if !constrained {
					continue
				}
				return fmt.Sprintf("%s target %s %s", name, show(clip.String(t, msgClip)), PhraseUnresolvable)
			}
			if !constrained && (pe.Phrase == PhraseOutside || pe.Phrase == PhraseUnresolvable) {
				continue
			}
			if req.Logger != nil {
				req.Logger.LogAttrs(context.Background(), slog.LevelDebug, "write target denied",
					slog.String("tool", tool), slog.String("path", t), slog.String("phrase", pe.Phrase), slog.String("resolution", pe.Detail))
			}
			return fmt.Sprintf("%s target %s", name, pe.Error())
		}
	}
	return ""
}

// unless returns msg for a constrained source, "" for the owner's console,
// whose malformed write arguments go on to the approval and the tool's own
// argument check.
func unless(constrained bool, msg string) string {
	if constrained {
		return msg
	}
	return ""
}

// show returns s as is when it is plain printable text, else Go-quoted, so a message
// never carries control or bidi characters.
func show(s string) string {
	if s == "" || strings.TrimSpace(s) != s {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if r == '"' || r == '\\' || r == utf8.RuneError || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
