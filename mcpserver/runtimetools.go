package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/internal/stdio"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/tool"
)

// exposedTool resolves a runtime tool name for tool_call: it must be in
// exposed_tools and in the live registry. Unknown and unexposed names are
// indistinguishable to the caller.
func (s *Server) exposedTool(name string) (tool.Tool, bool) {
	if !slices.Contains(s.exposed, name) {
		return nil, false
	}
	return s.conv.Registry().Get(name)
}

// Exposure is how one mcp_server.exposed_tools entry resolves for MCP
// clients.
type Exposure struct {
	// Name is the configured name.
	Name string
	// Tool is the registered tool, nil when Name is not registered.
	Tool tool.Tool
	// Hidden says why tools_list does not show the tool; "" when it does.
	Hidden string
}

// ResolveExposed resolves exposed (mcp_server.exposed_tools) against the
// live registry for the paired tier every MCP client has, in configured
// order with duplicates dropped: tools_list shows exactly the entries with
// an empty Hidden. A tool is shown only when the tier holds both its
// declared capability and the one the contract table gives its name (the
// gate denies a call lacking either). The CLI uses it to explain the
// allowlist; it never widens what tool_call may run.
func ResolveExposed(reg *tool.Registry, exposed []string) []Exposure {
	var out []Exposure
	seen := map[string]bool{}
	for _, name := range exposed {
		if seen[name] {
			continue
		}
		seen[name] = true
		t, ok := reg.Get(name)
		e := Exposure{Name: name, Tool: t}
		if !ok {
			e.Hidden = "not a registered runtime tool"
		} else if missing, ok := authz.ToolAllowed(authz.TierPaired, name, t.Capability()); !ok {
			e.Hidden = fmt.Sprintf("needs %s, which the paired tier of MCP clients does not hold", missing)
		}
		out = append(out, e)
	}
	return out
}

// toolsList returns exposed_tools ∩ live registry ∩ tools the paired tier
// may use, in configured order.
func (c *connection) toolsList() (*mcp.CallToolResult, error) {
	out := []contracts.RuntimeTool{}
	for _, e := range ResolveExposed(c.s.conv.Registry(), c.s.exposed) {
		if e.Hidden != "" {
			continue
		}
		schema := e.Tool.InputSchema()
		if !json.Valid(schema) {
			c.s.log.Warn("tools_list: runtime tool has an invalid input schema; hiding it", "tool", e.Name)
			continue
		}
		out = append(out, contracts.RuntimeTool{Name: e.Tool.Name(), Description: e.Tool.Description(), InputSchema: slices.Clone(schema)})
	}
	return payloadResult(out)
}

// toolCall runs one exposed runtime tool through the runtime's one tool
// call path: arguments first (-32602), then the gate, then the tool.
func (c *connection) toolCall(ctx context.Context, req *mcp.CallToolRequest, a contracts.ToolCallArgs) (*mcp.CallToolResult, error) {
	s := c.s
	t, ok := s.exposedTool(a.Name)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: contracts.TextRuntimeToolNotFound}
	}
	// a.Arguments holds numbers as json.Number (contracts.Validate), so
	// every number encodes again with the digits the client sent.
	raw := json.RawMessage("{}")
	if a.Arguments != nil {
		b, err := encodeArgs(a.Arguments)
		if err != nil {
			return nil, fmt.Errorf("encode tool_call arguments: %w", err)
		}
		raw = b
	}
	var requestID any
	if r := stdio.RequestOf(req); r != nil {
		requestID = r.ID().Raw()
	}
	// The line writes the request record first (a refused append means
	// nothing ran), then runs the one tool path, and records a denial.
	a.Arguments = nil // encoded once: free them while the tool runs
	progress := newProgress(ctx, req)
	res, err := c.line.CallTool(ctx, conversation.ToolCall{
		RequestID: requestID, ID: newCallID(), Name: t.Name(), Arguments: raw, Update: progress.send,
	})
	if err != nil {
		return textError(contracts.TextAuditUnavailable), nil
	}
	if ctx.Err() != nil {
		return nil, errRequestCancelled
	}
	if res.ArgumentsRejected() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: contracts.TextInvalidRuntimeToolArguments}
	}
	if d, denied := res.Denial(); denied {
		return textError(deniedText(d)), nil
	}
	if res.IsError {
		s.log.Info("tool_call: runtime tool failed", "tool", t.Name(), "reason_code", res.ReasonCode())
		return textError(contracts.TextRuntimeToolFailed), nil
	}
	content, err := toMCPContent(res.Content)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", t.Name(), err)
	}
	return &mcp.CallToolResult{Content: content}, nil
}

// deniedText is the fixed contract text of a gate denial.
func deniedText(d authz.Decision) string {
	switch d.ReasonCode {
	case authz.ReasonHardConstraint:
		return contracts.TextDeniedHardConstraint
	case authz.ReasonCapability:
		return contracts.TextDeniedCapabilityPrefix + string(d.Capability)
	case authz.ReasonRuleDeny:
		return contracts.TextDeniedPermissionRule
	default: // approval unavailable, required or not granted: nobody can approve over MCP
		return contracts.TextDeniedApprovalUnavailable
	}
}

// toMCPContent passes runtime content through: text as text, images as
// images with their media type. Anything else is an error, never text.
func toMCPContent(in []tool.Content) ([]mcp.Content, error) {
	out := make([]mcp.Content, 0, len(in))
	for i, c := range in {
		switch c.Type {
		case tool.TypeText:
			out = append(out, &mcp.TextContent{Text: c.Text})
		case tool.TypeImage:
			if !validImageType(c.MediaType) {
				return nil, fmt.Errorf("content %d: media type %q is not image/<token>", i, c.MediaType)
			}
			if len(c.Data) == 0 {
				return nil, fmt.Errorf("content %d: image has no data", i)
			}
			out = append(out, &mcp.ImageContent{Data: slices.Clone(c.Data), MIMEType: c.MediaType})
		default:
			return nil, fmt.Errorf("content %d: unsupported type %q", i, c.Type)
		}
	}
	return out, nil
}

// validImageType reports whether mt is "image/" followed by an RFC 9110
// token.
func validImageType(mt string) bool {
	sub, ok := strings.CutPrefix(mt, "image/")
	if !ok || sub == "" {
		return false
	}
	for i := 0; i < len(sub); i++ {
		ch := sub[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", ch) >= 0:
		default:
			return false
		}
	}
	return true
}

// newCallID returns the id of one runtime tool call.
func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mcp_call_" + hex.EncodeToString(b[:])
}
