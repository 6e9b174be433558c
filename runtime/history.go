package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// metadata is what the turn loop stores in sessions.Message.Metadata, as
// JSON. Each role uses a subset:
//
//   - user: Authority (the speaker's six fields), Source, AgentID
//   - assistant asking for tools: ToolCalls, Provider, Usage, HistoryOmitted
//   - tool: ToolCallID, ToolName, IsError, Denied, ReasonCode
//   - final assistant: Provider, StopReason, Usage, HistoryOmitted; or
//     Failed and ErrorClass when the turn failed (the content is then the
//     failure text, which is never sent back to the model)
//
// Usage is the model call's token count when the provider reported it;
// HistoryOmitted is what the call left out of the history to fit
// Options.ContextTokens, when it left anything out.
type metadata struct {
	Authority  *authz.Authority `json:"authority,omitempty"`
	Source     string           `json:"source,omitempty"`
	AgentID    string           `json:"agent_id,omitempty"`
	ToolCalls  []toolCallData   `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
	ToolName   string           `json:"tool_name,omitempty"`
	IsError    bool             `json:"is_error,omitempty"`
	Denied     bool             `json:"denied,omitempty"`
	ReasonCode string           `json:"reason_code,omitempty"`
	Provider   string           `json:"provider,omitempty"`
	StopReason string           `json:"stop_reason,omitempty"`
	Failed     bool             `json:"failed,omitempty"`
	ErrorClass string           `json:"error_class,omitempty"`

	Usage          *provider.Usage `json:"usage,omitempty"`
	HistoryOmitted *Omitted        `json:"history_omitted,omitempty"`

	// RequestID is the turn's TurnRequest.RequestID, on its user message
	// and its reply; Reply marks the reply (the turn's final assistant
	// message).
	RequestID string `json:"request_id,omitempty"`
	Reply     bool   `json:"reply,omitempty"`
}

// StoredReply returns the reply the turn with requestID stored, as
// ProcessUserTurn returned it, looked up in branch (a session's active
// branch, root first, as Store.Branch reads it): found is false when the
// branch holds no reply of that turn (it stored none, or the head was
// moved off it). A caller that lost a turn's answer (its process stopped
// after the final write) learns the outcome from the store this way.
func StoredReply(branch []sessions.Message, requestID string) (res TurnResult, found bool) {
	if requestID == "" {
		return TurnResult{}, false
	}
	for i := len(branch) - 1; i >= 0; i-- {
		m := branch[i]
		md := decodeMetadata(m.Metadata)
		if md.RequestID != requestID {
			continue
		}
		switch {
		case m.Role == sessions.RoleAssistant && md.Reply && !found:
			res = TurnResult{Text: m.Content, AssistantMessageID: m.ID, Failed: md.Failed, ErrorClass: md.ErrorClass}
			found = true
		case m.Role == sessions.RoleUser && found:
			res.UserMessageID = m.ID
			return res, true
		}
	}
	return res, found
}

// UsageOf returns the token usage recorded in a stored message's metadata,
// or nil when none was.
func UsageOf(raw json.RawMessage) *provider.Usage { return decodeMetadata(raw).Usage }

// toolCallData is one tool call the model asked for. Arguments is the JSON
// the model produced; arguments that were not valid JSON are kept as a JSON
// string.
type toolCallData struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func (m metadata) encode() json.RawMessage {
	data, err := json.Marshal(m)
	if err != nil {
		// Every field is a plain value or valid JSON (see safeArgs).
		panic(fmt.Sprintf("runtime: encode metadata: %v", err))
	}
	return data
}

func decodeMetadata(raw json.RawMessage) metadata {
	var m metadata
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &m) // unreadable metadata reads as none
	}
	return m
}

// safeArgs returns args as valid JSON: itself when it is, else a JSON string
// holding its text.
func safeArgs(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage(`{}`)
	}
	if json.Valid(args) {
		return args
	}
	s, _ := json.Marshal(string(args))
	return s
}

// envelope is the JSON the model sees for a non-owner speaker's text. Field
// order is fixed by the struct.
type envelope struct {
	SpeakerKind    string `json:"speaker_kind"`
	SpeakerID      string `json:"speaker_id"`
	SpeakerDisplay string `json:"speaker_display"`
	Content        string `json:"content"`
}

func isOwner(a *authz.Authority) bool {
	return a != nil && a.SpeakerKind == authz.SpeakerKindOwner && a.Tier == authz.TierOwner
}

// modelText is what the model sees for a stored user message: the text
// itself for the owner, else the speaker envelope. A message without a
// recorded authority is wrapped as an unknown speaker, so nothing can pose
// as the owner by being stored without metadata.
func modelText(content string, a *authz.Authority) string {
	if isOwner(a) {
		return content
	}
	e := envelope{SpeakerKind: "unknown", SpeakerID: "unknown", SpeakerDisplay: "Unknown speaker", Content: content}
	if a != nil {
		e.SpeakerKind, e.SpeakerID, e.SpeakerDisplay = a.SpeakerKind, a.SpeakerID, a.SpeakerDisplay
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		panic(fmt.Sprintf("runtime: encode envelope: %v", err))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// history turns the stored active branch into the model's conversation.
// Failure notices are left out (they are the runtime speaking, not the
// model), and tool calls are kept only with their results, so the
// conversation stays valid for every wire format.
func history(branch []sessions.Message) []provider.Message {
	out := make([]provider.Message, 0, len(branch))
	answered := map[string]bool{}  // call ids with a stored result
	requested := map[string]bool{} // call ids of the assistant messages kept so far
	for _, m := range branch {
		if m.Role == sessions.RoleTool {
			answered[decodeMetadata(m.Metadata).ToolCallID] = true
		}
	}
	for _, m := range branch {
		meta := decodeMetadata(m.Metadata)
		switch m.Role {
		case sessions.RoleUser:
			out = append(out, provider.Message{Role: provider.RoleUser, Content: modelText(m.Content, meta.Authority)})
		case sessions.RoleAssistant:
			if meta.Failed {
				continue
			}
			pm := provider.Message{Role: provider.RoleAssistant, Content: m.Content}
			for _, c := range meta.ToolCalls {
				if answered[c.ID] {
					pm.ToolCalls = append(pm.ToolCalls, provider.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
					requested[c.ID] = true
				}
			}
			if pm.Content == "" && len(pm.ToolCalls) == 0 {
				continue
			}
			out = append(out, pm)
		case sessions.RoleTool:
			if !requested[meta.ToolCallID] {
				continue // a result without its call would be rejected
			}
			out = append(out, provider.Message{Role: provider.RoleTool, Content: m.Content,
				ToolCallID: meta.ToolCallID, ToolName: meta.ToolName, IsError: meta.IsError})
		case sessions.RoleSystem:
			out = append(out, provider.Message{Role: provider.RoleSystem, Content: m.Content})
		}
	}
	return out
}

// resultText is what the model sees of a tool result.
func resultText(r tool.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		switch c.Type {
		case tool.TypeText:
			b.WriteString(c.Text)
		case tool.TypeImage:
			fmt.Fprintf(&b, "[image %s, %d bytes, not shown to the model]", c.MediaType, len(c.Data))
		}
	}
	if b.Len() == 0 {
		if r.IsError {
			return "the tool failed without a message"
		}
		return "(no output)"
	}
	return b.String()
}
