package authz

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sources of a request. Only [SourceCLI] is trusted as a person at a terminal; every
// other value, including unknown ones, is constrained (hard constraints apply) and
// non-interactive.
const (
	SourceMCP        = "mcp"
	SourceAgentSpawn = "agent_spawn"
	SourceCLI        = "cli"
)

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
	capab := ToolCapability(tool)
	constrained := req.Source != SourceCLI
	nonInteractive := constrained || req.Authority.Interaction != InteractionInteractive

	if constrained {
		if msg := hardConstraint(req, tool, args); msg != "" {
			return deny(ReasonHardConstraint, capab, "hard constraint: "+msg)
		}
	}

	if err := req.Authority.Validate(); err != nil {
		return deny(ReasonCapability, capab, fmt.Sprintf("authority is invalid, so it does not allow %s: %v", capab, err))
	}
	if !req.Authority.Tier.Has(capab) {
		return deny(ReasonCapability, capab, fmt.Sprintf("authority tier %s does not allow %s", show(string(req.Authority.Tier)), capab))
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
	name := show(clip(tool))
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
		return deny(ReasonApprovalUnavailable, capab, fmt.Sprintf("approval unavailable: %s, and speaker %s is non-interactive", why, show(clip(req.Authority.SpeakerID))))
	case nonInteractive:
		src := req.Source
		if src == "" {
			src = "(none)"
		}
		return deny(ReasonApprovalUnavailable, capab, fmt.Sprintf("approval unavailable: %s, and source %s is non-interactive", why, show(clip(src))))
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

// hardConstraint returns why a constrained source may not make this call, or "".
func hardConstraint(req Request, tool string, args json.RawMessage) string {
	src := req.Source
	if src == "" {
		src = "(none)"
	}
	name := show(clip(tool))
	if IsRiskyTool(tool) {
		return fmt.Sprintf("%s is not allowed for source %s", name, show(clip(src)))
	}
	var targets []string
	switch l := strings.ToLower(tool); l {
	case "write", "edit", "apply_patch":
		obj, err := decodeArgs(args)
		if err != nil {
			return fmt.Sprintf("%s arguments are not a valid JSON object: %v", name, err)
		}
		if l == "apply_patch" {
			patch, err := argString(obj, "patch")
			if err != nil {
				return fmt.Sprintf("%s needs one string %q argument: %v", name, "patch", err)
			}
			targets, err = PatchTargets(patch)
			if err != nil {
				return fmt.Sprintf("%s patch cannot be checked: %v", name, err)
			}
		} else {
			p, err := argString(obj, "path")
			if err != nil {
				return fmt.Sprintf("%s needs one non-empty string %q argument: %v", name, "path", err)
			}
			if p == "" {
				return fmt.Sprintf("%s needs one non-empty string %q argument", name, "path")
			}
			targets = []string{p}
		}
	default:
		return ""
	}
	if len(req.WorkDirs) == 0 {
		return fmt.Sprintf("%s cannot write: source %s has no working directory", name, show(clip(src)))
	}
	for _, t := range targets {
		r, err := ResolvePath(req.WorkDirs[0], t)
		if err != nil {
			return fmt.Sprintf("%s target cannot be resolved: %v", name, err)
		}
		if !InsideWorkDirs(r, req.WorkDirs) {
			return fmt.Sprintf("%s target %s is outside the working directories", name, show(r))
		}
		if IsDangerousPath(r) {
			return fmt.Sprintf("%s target %s is a protected file or inside a protected directory", name, show(r))
		}
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
