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
// [NewMCPClient] and [NewOwner] make every speaker in ask mode.
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
// A zero Speaker, or one no constructor made, is denied every call
// ([ReasonCapability]).
//
// Decide never reads or changes anything but the filesystem metadata needed to resolve
// paths, and it never panics.
func Decide(sp Speaker, tool string, args json.RawMessage) Decision {
	return DecideTool(sp, tool, "", args)
}

// DecideTool is [Decide] for a tool that declares the capability it needs
// (a runtime tool's Capability): step 2 then also requires the tier to
// hold declared ([ToolAllowed]). Decision.Capability stays the table's.
func DecideTool(sp Speaker, tool string, declared Capability, args json.RawMessage) Decision {
	capab := ToolCapability(tool)
	if !sp.made {
		return deny(ReasonCapability, capab, fmt.Sprintf("the speaker was not made by authz, so it does not allow %s", capab))
	}
	constrained := IsConstrained(sp.source)
	nonInteractive := !sp.Interactive()

	if msg := hardConstraint(sp, tool, args, constrained); msg != "" {
		return deny(ReasonHardConstraint, capab, "hard constraint: "+msg)
	}

	if missing, ok := ToolAllowed(sp.authority.Tier, tool, declared); !ok {
		return deny(ReasonCapability, missing, fmt.Sprintf("authority tier %s does not allow %s", show(string(sp.authority.Tier)), missing))
	}

	var denyRule, askRule, allowRule *Rule
	if sp.rules.Len() > 0 {
		subj := makeSubject(sp, tool, args)
		for i := range sp.rules.compiled {
			c := &sp.rules.compiled[i]
			if !c.matches(tool, subj) {
				continue
			}
			r := &c.rule
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
		return approval(sp, nonInteractive, capab, fmt.Sprintf("permission rule %s asks before %s", askRule, name))
	}
	if allowRule != nil {
		return Decision{Allowed: true, Capability: capab, Message: fmt.Sprintf("allowed: permission rule %s allows %s", allowRule, name)}
	}
	if IsSafeTool(tool) {
		return Decision{Allowed: true, Capability: capab, Message: fmt.Sprintf("allowed: %s is a safe tool", name)}
	}
	if !nonInteractive && sp.mode == ModeBypass && sp.authority.Tier.Has(CapApprovalRequest) {
		return Decision{Allowed: true, Capability: capab, Message: fmt.Sprintf("allowed: %s runs without approval in bypass mode", name)}
	}
	return approval(sp, nonInteractive, capab, fmt.Sprintf("%s needs approval", name))
}

// approval turns "needs approval" into NeedsApproval or a denial.
func approval(sp Speaker, nonInteractive bool, capab Capability, why string) Decision {
	switch {
	case nonInteractive && sp.source == SourceCLI:
		return deny(ReasonApprovalUnavailable, capab, fmt.Sprintf("approval unavailable: %s, and speaker %s is non-interactive", why, show(clip.String(sp.authority.SpeakerID, msgClip))))
	case nonInteractive:
		return deny(ReasonApprovalUnavailable, capab, fmt.Sprintf("approval unavailable: %s, and source %s is non-interactive", why, show(clip.String(sp.source, msgClip))))
	case !sp.authority.Tier.Has(CapApprovalRequest):
		return deny(ReasonApprovalUnavailable, capab, fmt.Sprintf("approval unavailable: %s, and authority tier %s cannot request approval", why, show(string(sp.authority.Tier))))
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
// that [Speaker.WriteTarget] refuses. For the owner's console: a write into
// the state directory or a dangerous path ([Speaker.WriteTarget] again); a
// write outside the working directories is left to the approval and then
// the file tool, which refuses it.
func hardConstraint(sp Speaker, tool string, args json.RawMessage, constrained bool) string {
	src := sp.source
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
	if len(sp.workDirs) == 0 {
		if !constrained {
			return ""
		}
		return fmt.Sprintf("%s cannot write: source %s has no working directory", name, show(clip.String(src, msgClip)))
	}
	for _, t := range targets {
		if _, err := sp.WriteTarget(tool, t); err != nil {
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
			if sp.log != nil {
				sp.log.LogAttrs(context.Background(), slog.LevelDebug, "write target denied",
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
