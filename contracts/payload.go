package contracts

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/internal/canonjson"
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

// Bounds of the session_get and sessions_list payloads. A client reads a
// session whose branch passes them as its newest part: the contract
// (docs/contract.md, section 4) states them.
const (
	// MaxMessageContentBytes bounds the content of one session_get message.
	// Longer content keeps its head and tail, about this many bytes
	// together and cut on UTF-8 boundaries, around a
	// "\n[... N bytes truncated ...]\n" marker (the marker of clipped tool
	// output).
	MaxMessageContentBytes = 256 << 10
	// MaxSessionPayloadBytes bounds the session_get payload text (the JSON
	// array in its one text content). When the branch does not fit, its
	// newest messages that fit are returned, root first as always, and the
	// content of the first returned one starts with
	// [OmittedMessagesMarker].
	MaxSessionPayloadBytes = 4 << 20
	// MaxTitleBytes bounds a sessions_list title: a longer one is cut on a
	// UTF-8 boundary and ends in "...".
	MaxTitleBytes = 1000
)

// OmittedMessagesMarker starts the content of the first message of a
// session_get payload that left out the n oldest messages of the branch.
func OmittedMessagesMarker(n int) string {
	noun := " earlier messages"
	if n == 1 {
		noun = " earlier message"
	}
	return "[... " + strconv.Itoa(n) + noun + " omitted ...]\n"
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
	// JSON-RPC -32601 of tool_call for an unknown, unexposed or unregistered
	// runtime tool: one text for the three, so it never tells which names exist.
	TextRuntimeToolNotFound = "runtime tool not exposed; tools_list lists the exposed ones"
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
	// isError text of tool_call when its audit record cannot be written:
	// the tool has not run (prompt_send says so with the reason
	// "audit_unavailable" of TextPromptExecutionFailed).
	TextAuditUnavailable = "[refused] audit log unavailable"
	// JSON-RPC error message (code 0) answering a cancelled request.
	TextRequestCancelled = "Request cancelled"
)

// EncodePayload returns the wire text of a payload: compact JSON with object
// keys sorted at every depth, no HTML escaping and non-ASCII text kept as
// UTF-8. A nil slice encodes as [] rather than null, since every array
// payload of the contract is a list.
func EncodePayload(v any) (string, error) {
	if b, ok, err := appendKnown(nil, v); ok {
		if err != nil {
			return "", fmt.Errorf("encode payload %T: %w", v, err)
		}
		return string(b), nil
	}
	return encodeGeneric(v)
}

// encodeGeneric is EncodePayload for any value: encoding/json, then
// canonjson re-encodes the decoded result with sorted keys.
func encodeGeneric(v any) (string, error) {
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

// appendKnown appends the canonical JSON of the contract's payload types
// (and slices of them) to b without the generic path's round trip through
// encoding/json and generic values: keys are written in sorted order and
// strings with canonjson.AppendString, so the bytes are those of
// canonjson.Marshal (TestEncodePayloadFastPath and FuzzEncodePayloadFastPath
// hold the two paths to each other). ok is false for any other type.
func appendKnown(b []byte, v any) (_ []byte, ok bool, err error) {
	switch v := v.(type) {
	case []SessionSummary:
		b = appendList(b, v, sizeSessionSummary, appendSessionSummary)
	case SessionSummary:
		b = appendSessionSummary(b, &v)
	case []Message:
		b = appendList(b, v, sizeMessage, appendMessage)
	case Message:
		b = appendMessage(b, &v)
	case PromptSendResult:
		b = appendPromptSendResult(b, &v)
	case PromptCancelResult:
		b = appendPromptCancelResult(b, &v)
	case ErrorPayload:
		b = appendErrorPayload(b, &v)
	case []RuntimeTool:
		b = append(b, '[')
		for i := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendRuntimeTool(b, &v[i]); err != nil {
				return nil, true, err
			}
		}
		b = append(b, ']')
	case RuntimeTool:
		b, err = appendRuntimeTool(b, &v)
	default:
		return nil, false, nil
	}
	return b, true, err
}

// appendList appends list as a JSON array (a nil list as []). It grows b
// once, by the sum of size over the elements (exact unless strings need
// escapes).
func appendList[T any](b []byte, list []T, size func(*T) int, appendOne func([]byte, *T) []byte) []byte {
	n := 2
	for i := range list {
		n += size(&list[i]) + 1
	}
	b = slices.Grow(b, n)
	b = append(b, '[')
	for i := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendOne(b, &list[i])
	}
	return append(b, ']')
}

// The appenders below write each type's keys in sorted (byte) order.

// sizeSessionSummary and sizeMessage bound the encoded size of one
// element when no string needs an escape: the fixed text, the strings and
// 20 bytes for the integer.
func sizeSessionSummary(s *SessionSummary) int {
	return len(`{"id":"","title":"","updated_at":}`) + len(s.ID) + len(s.Title) + 20
}

func sizeMessage(m *Message) int {
	return len(`{"content":"","id":"","role":"","timestamp":}`) + len(m.Content) + len(m.ID) + len(m.Role) + 20
}

func appendSessionSummary(b []byte, s *SessionSummary) []byte {
	b = append(b, `{"id":`...)
	b = canonjson.AppendString(b, s.ID)
	b = append(b, `,"title":`...)
	b = canonjson.AppendString(b, s.Title)
	b = append(b, `,"updated_at":`...)
	b = strconv.AppendInt(b, s.UpdatedAt, 10)
	return append(b, '}')
}

func appendMessage(b []byte, m *Message) []byte {
	b = append(b, `{"content":`...)
	b = canonjson.AppendString(b, m.Content)
	b = append(b, `,"id":`...)
	b = canonjson.AppendString(b, m.ID)
	b = append(b, `,"role":`...)
	b = canonjson.AppendString(b, m.Role)
	b = append(b, `,"timestamp":`...)
	b = strconv.AppendInt(b, m.Timestamp, 10)
	return append(b, '}')
}

func appendPromptSendResult(b []byte, r *PromptSendResult) []byte {
	b = append(b, `{"assistant_msg_id":`...)
	b = canonjson.AppendString(b, r.AssistantMsgID)
	b = append(b, `,"failed":`...)
	b = strconv.AppendBool(b, r.Failed)
	b = append(b, `,"session_id":`...)
	b = canonjson.AppendString(b, r.SessionID)
	b = append(b, `,"text":`...)
	b = canonjson.AppendString(b, r.Text)
	return append(b, '}')
}

func appendPromptCancelResult(b []byte, r *PromptCancelResult) []byte {
	b = append(b, `{"cancelled":`...)
	b = strconv.AppendBool(b, r.Cancelled)
	b = append(b, `,"session_id":`...)
	b = canonjson.AppendString(b, r.SessionID)
	return append(b, '}')
}

func appendErrorPayload(b []byte, p *ErrorPayload) []byte {
	b = append(b, `{"error":`...)
	b = canonjson.AppendString(b, p.Error)
	if p.Reason != "" { // omitempty
		b = append(b, `,"reason":`...)
		b = canonjson.AppendString(b, p.Reason)
	}
	return append(b, '}')
}

// appendRuntimeTool canonicalises the tool's schema as the generic path
// does: a nil schema is null, anything else must be one JSON value.
func appendRuntimeTool(b []byte, t *RuntimeTool) ([]byte, error) {
	b = append(b, `{"description":`...)
	b = canonjson.AppendString(b, t.Description)
	b = append(b, `,"inputSchema":`...)
	if t.InputSchema == nil {
		b = append(b, "null"...)
	} else {
		var err error
		if b, err = canonjson.AppendCanonical(b, t.InputSchema); err != nil {
			return nil, fmt.Errorf("tool %q input schema: %w", t.Name, err)
		}
	}
	b = append(b, `,"name":`...)
	b = canonjson.AppendString(b, t.Name)
	return append(b, '}'), nil
}
