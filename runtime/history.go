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
//   - user: Authority (the speaker's six fields), Source, AgentID, Before
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
	// Before, on a user message, sums up the history before it.
	Before *prefix `json:"history_before,omitempty"`

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

// modelText is what the model sees for a stored user message: the text
// itself for the owner, else the speaker envelope. A message without a
// recorded authority is wrapped as an unknown speaker, so nothing can pose
// as the owner by being stored without metadata.
func modelText(content string, a *authz.Authority) string {
	if a != nil && a.IsOwner() {
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

// history turns the stored active branch into the model's conversation,
// one part at a time (see [parts]).
func history(branch []sessions.Message) []provider.Message {
	var out []provider.Message
	for _, p := range parts(branch) {
		out = append(out, p.msgs...)
	}
	return out
}

// part is one stored message other than a tool result, with the tool
// results stored right after it: what it becomes in the model's
// conversation is decided by those messages alone, so a history can be
// built from the newest part backwards and stop anywhere.
type part struct {
	id     string
	msgs   []provider.Message // what the model sees of it: nothing, or one unit of fitHistory
	tokens int                // estimateMessage of msgs
	// before is a user message's history_before, when it has one.
	before *prefix
	user   bool
}

// parts splits a stored chain into its parts, oldest first. Tool results
// before the chain's first other message belong to a part that is not in
// it: they are left out, as are results without their call anywhere.
//
// What the model sees: failure notices are left out (they are the runtime
// speaking, not the model); an assistant's tool calls are kept only with
// their results stored right after it, and a result only after its call,
// so the conversation stays valid for every wire format; a user message is
// its text in its speaker's envelope ([modelText]).
func parts(chain []sessions.Message) []part {
	var out []part
	for i := 0; i < len(chain); {
		if chain[i].Role == sessions.RoleTool {
			i++
			continue
		}
		end := i + 1
		for end < len(chain) && chain[end].Role == sessions.RoleTool {
			end++
		}
		out = append(out, makePart(chain[i], chain[i+1:end]))
		i = end
	}
	return out
}

func makePart(m sessions.Message, results []sessions.Message) part {
	meta := decodeMetadata(m.Metadata)
	p := part{id: m.ID}
	switch m.Role {
	case sessions.RoleUser:
		p.user, p.before = true, meta.Before
		p.msgs = []provider.Message{{Role: provider.RoleUser, Content: modelText(m.Content, meta.Authority)}}
	case sessions.RoleSystem:
		p.msgs = []provider.Message{{Role: provider.RoleSystem, Content: m.Content}}
	case sessions.RoleAssistant:
		if meta.Failed {
			break
		}
		answered := map[string]bool{}
		rmeta := make([]metadata, len(results))
		for i, r := range results {
			rmeta[i] = decodeMetadata(r.Metadata)
			answered[rmeta[i].ToolCallID] = true
		}
		pm := provider.Message{Role: provider.RoleAssistant, Content: m.Content}
		requested := map[string]bool{}
		for _, c := range meta.ToolCalls {
			if answered[c.ID] {
				pm.ToolCalls = append(pm.ToolCalls, provider.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
				requested[c.ID] = true
			}
		}
		if pm.Content == "" && len(pm.ToolCalls) == 0 {
			break
		}
		p.msgs = []provider.Message{pm}
		for i, r := range results {
			if !requested[rmeta[i].ToolCallID] {
				continue // a result without its call would be rejected
			}
			p.msgs = append(p.msgs, provider.Message{Role: provider.RoleTool, Content: r.Content,
				ToolCallID: rmeta[i].ToolCallID, ToolName: rmeta[i].ToolName, IsError: rmeta[i].IsError})
		}
	}
	for _, pm := range p.msgs {
		p.tokens += estimateMessage(pm)
	}
	return p
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
