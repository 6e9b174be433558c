package contracts

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts/internal/canonjson"
)

// SessionSummary is one element of the sessions_list payload.
type SessionSummary struct {
	ID        string `json:"id"`
	Title     string `json:"title"`
	UpdatedAt int64  `json:"updated_at"` // Unix seconds
}

// Message is one element of the session_get payload: a message of the
// session's active branch.
type Message struct {
	ID        string `json:"id"`
	Role      string `json:"role"` // user, assistant, tool or system
	Content   string `json:"content"`
	Timestamp int64  `json:"timestamp"` // Unix seconds
}

// PromptSendResult is the prompt_send payload. Failed reports that the model
// or the turn failed; it is still a normal (non-error) result.
type PromptSendResult struct {
	SessionID      string `json:"session_id"`
	Text           string `json:"text"`
	AssistantMsgID string `json:"assistant_msg_id"`
	Failed         bool   `json:"failed"`
}

// PromptCancelResult is the prompt_cancel payload.
type PromptCancelResult struct {
	SessionID string `json:"session_id"`
	Cancelled bool   `json:"cancelled"`
}

// RuntimeTool is one element of the tools_list payload.
type RuntimeTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// ErrorPayload is the JSON text of an isError result of the wrapper tools,
// for example {"error":"session not found"}. Reason is an optional
// machine-readable cause.
type ErrorPayload struct {
	Error  string `json:"error"`
	Reason string `json:"reason,omitempty"`
}

// The fixed texts of the contract. Errors that travel as isError results
// carry them either inside an [ErrorPayload] or as the whole text; the others
// are JSON-RPC error messages.
const (
	// isError {"error": ...} of sessions_list and session_get.
	TextSessionNotFound        = "session not found"
	TextSessionDataUnavailable = "session data unavailable"
	// isError {"error": ...} of prompt_send.
	TextPromptExecutionFailed = "prompt execution failed"
	// JSON-RPC -32602 of prompt_send with a session_id that does not exist.
	TextInvalidPromptSession = "invalid MCP prompt session"
	// JSON-RPC -32601 of tool_call for an unknown or unexposed runtime tool.
	TextRuntimeToolNotFound = "underlying Runtime tool not found"
	// JSON-RPC -32602 of tool_call for arguments the runtime tool's schema rejects.
	TextInvalidRuntimeToolArguments = "invalid underlying Runtime tool arguments"
	// isError texts of tool_call when the gate denies the call.
	TextDeniedHardConstraint = "[denied] hard constraint"
	// TextDeniedCapabilityPrefix is followed by the capability, for example
	// "[denied] authority tier does not allow fs.read".
	TextDeniedCapabilityPrefix    = "[denied] authority tier does not allow "
	TextDeniedPermissionRule      = "[denied] blocked by permission rule"
	TextDeniedApprovalUnavailable = "[denied] approval unavailable for non-interactive MCP"
	// isError text of tool_call when the runtime tool ran and failed.
	TextRuntimeToolFailed = "Runtime tool execution failed"
	// isError text of any other failure inside a handler.
	TextToolExecutionFailed = "MCP tool execution failed"
	// JSON-RPC error message (code 0) answering a cancelled request.
	TextRequestCancelled = "Request cancelled"
)

// EncodePayload returns the wire text of a payload: compact JSON with object
// keys sorted at every depth, no HTML escaping and non-ASCII text kept as
// UTF-8. A nil slice encodes as [] rather than null, since every array
// payload of the contract is a list.
func EncodePayload(v any) (string, error) {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		return "[]", nil
	}
	b, err := canonjson.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode payload %T: %w", v, err)
	}
	return string(b), nil
}

// DecodePayload decodes the wire text of a payload into v, a pointer.
// Unknown object keys are ignored so that clients keep working when a payload
// gains a field.
func DecodePayload(text string, v any) error {
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return fmt.Errorf("decode payload into %T: %w", v, err)
	}
	return nil
}

// TextResult returns the successful tools/call result for a payload: one
// TextContent holding [EncodePayload]'s text.
func TextResult(v any) (*mcp.CallToolResult, error) {
	text, err := EncodePayload(v)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

// ErrorResult returns the isError tools/call result whose one TextContent
// holds p as JSON, for example {"error":"session not found"}.
func ErrorResult(p ErrorPayload) *mcp.CallToolResult {
	text, err := EncodePayload(p)
	if err != nil { // unreachable: two strings always encode
		panic(fmt.Sprintf("contracts: %v", err))
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
