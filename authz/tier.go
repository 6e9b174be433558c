package authz

import "strings"

// Tier is an authority tier: how much a speaker may do.
type Tier string

// The two tiers of docs/contract.md section 3.
const (
	// TierOwner is the install's owner: every capability.
	TierOwner Tier = "owner"
	// TierPaired is a paired client such as an MCP client: reply, memory.read and
	// memory.source.append only. This set never grows.
	TierPaired Tier = "paired"
)

// Capability is one thing a tier may do. Every tool needs exactly one (see [ToolCapability]).
type Capability string

// The capabilities of docs/contract.md section 3, in table order.
const (
	CapReply                Capability = "reply"
	CapMemoryRead           Capability = "memory.read"
	CapMemorySourceAppend   Capability = "memory.source.append"
	CapMemoryTrustedPromote Capability = "memory.trusted.promote"
	CapScheduleCreate       Capability = "schedule.create"
	CapScheduleManage       Capability = "schedule.manage"
	CapFSRead               Capability = "fs.read"
	CapFSWrite              Capability = "fs.write"
	CapProcessExec          Capability = "process.exec"
	CapNetworkSend          Capability = "network.send"
	CapApprovalRequest      Capability = "approval.request"
	CapRuntimeControl       Capability = "runtime.control"
)

// tierTable is the tier -> capability table. Tests pin it exactly.
var tierTable = map[Tier][]Capability{
	TierOwner: {
		CapReply, CapMemoryRead, CapMemorySourceAppend, CapMemoryTrustedPromote,
		CapScheduleCreate, CapScheduleManage, CapFSRead, CapFSWrite,
		CapProcessExec, CapNetworkSend, CapApprovalRequest, CapRuntimeControl,
	},
	TierPaired: {CapReply, CapMemoryRead, CapMemorySourceAppend},
}

// Capabilities returns the capabilities of tier t in table order, as a fresh slice.
// An unknown tier has none (nil).
func Capabilities(t Tier) []Capability {
	caps, ok := tierTable[t]
	if !ok {
		return nil
	}
	out := make([]Capability, len(caps))
	copy(out, caps)
	return out
}

// Has reports whether tier t holds capability c. An unknown tier holds nothing.
func (t Tier) Has(c Capability) bool {
	for _, have := range tierTable[t] {
		if have == c {
			return true
		}
	}
	return false
}

// Valid reports whether t is one of the known tiers.
func (t Tier) Valid() bool {
	_, ok := tierTable[t]
	return ok
}

// toolCapabilities is the exact-name part of the tool -> capability table.
var toolCapabilities = map[string]Capability{
	"memory_status":  CapMemoryRead,
	"memory_search":  CapMemoryRead,
	"memory_grep":    CapMemoryRead,
	"memory_get":     CapMemoryRead,
	"memory_browse":  CapMemoryRead,
	"memory_update":  CapMemorySourceAppend,
	"memory_promote": CapMemoryTrustedPromote,
	"read":           CapFSRead,
	"glob":           CapFSRead,
	"grep":           CapFSRead,
	"list":           CapFSRead,
	"write":          CapFSWrite,
	"edit":           CapFSWrite,
	"apply_patch":    CapFSWrite,
	"bash":           CapProcessExec,
	"exec":           CapProcessExec,
	"shell":          CapProcessExec,
	"process":        CapProcessExec,
	"execute_code":   CapProcessExec,
	"agent":          CapProcessExec,
	"web_fetch":      CapNetworkSend,
	"web_search":     CapNetworkSend,
	"send_message":   CapNetworkSend,
}

// ToolCapability returns the capability a tool needs (docs/contract.md section 3). Names are
// compared exactly (case-sensitive); the prefixes "worktree_" (fs.write) and "todo_"
// (runtime.control) cover families. Any tool not classified needs [CapProcessExec],
// which only the owner tier holds.
func ToolCapability(tool string) Capability {
	if c, ok := toolCapabilities[tool]; ok {
		return c
	}
	switch {
	case strings.HasPrefix(tool, "worktree_"):
		return CapFSWrite
	case strings.HasPrefix(tool, "todo_"):
		return CapRuntimeControl
	}
	return CapProcessExec
}

// ToolAllowed is the one answer to "may tier use this tool?": the tier must
// hold the capability the contract table gives the tool's name
// ([ToolCapability]; unclassified names need process.exec) and the
// capability the tool declares where it is defined (declared; "" means
// none beyond the table's). It returns the first capability the tier
// lacks, or "" and true. The gate ([Decide] through [DecideTool]), the
// tools a turn offers its model and the tools tools_list shows all ask
// here.
func ToolAllowed(t Tier, tool string, declared Capability) (missing Capability, ok bool) {
	if c := ToolCapability(tool); !t.Has(c) {
		return c, false
	}
	if declared != "" && !t.Has(declared) {
		return declared, false
	}
	return "", true
}

// safeTools run without approval once steps 1-3 of the gate pass (plus every todo_* tool).
var safeTools = map[string]bool{
	"read": true, "glob": true, "grep": true, "list": true,
	"memory_status": true, "memory_search": true, "memory_grep": true,
	"memory_get": true, "memory_browse": true, "memory_update": true,
}

// IsSafeTool reports whether tool is on the safe list of docs/contract.md section 3 step 4:
// read, glob, grep, list, todo_*, memory_status, memory_search, memory_grep, memory_get,
// memory_browse and memory_update. Safe tools still pass the hard constraints, the
// capability check and the permission rules first.
func IsSafeTool(tool string) bool {
	return safeTools[tool] || strings.HasPrefix(tool, "todo_")
}
