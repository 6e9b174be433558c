package provider

import (
	"context"
	"encoding/json"
)

// Message roles of [Message.Role].
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Normalised stop reasons of [Response.StopReason]. Providers map their own
// values onto these; a value with no counterpart is passed through as is.
const (
	StopEnd       = "end"        // the model finished its reply
	StopToolUse   = "tool_use"   // the model wants tools run before it continues
	StopMaxTokens = "max_tokens" // the reply was cut at the output token limit
)

// Message is one entry of the conversation sent to a model.
//
// An assistant message may carry ToolCalls; each call is answered by a
// following message with Role [RoleTool], ToolCallID naming the call and
// ToolName the tool. IsError marks a tool result that is a failure (a denial
// included), which some wire formats carry as a flag.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	ToolName   string
	IsError    bool
}

// ToolCall is one tool invocation requested by the model. Arguments is the
// JSON text the model produced; it is not guaranteed to be valid JSON or to
// match the tool's schema.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolSpec describes a tool the model may call. InputSchema is a JSON Schema
// object.
type ToolSpec struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// Request is one model call. Model overrides the provider's configured model
// when not empty; MaxTokens 0 means the provider's default.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
}

// Delta is a fragment of assistant text, delivered while the reply streams.
type Delta struct {
	Text string
}

// Response is a complete model reply: its text (the concatenation of every
// delta), the tool calls it requested, in order, and why it stopped.
type Response struct {
	Text       string
	ToolCalls  []ToolCall
	StopReason string
}

// Provider is a model endpoint. Stream sends req, calls onDelta (when not
// nil) from the calling goroutine for each text fragment as it arrives, and
// returns the whole reply. Cancelling ctx aborts the request at once; the
// error is then an [*Error] of class [ClassCancelled] that also matches the
// context's error with errors.Is. Every other failure is an [*Error] too.
type Provider interface {
	Name() string
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (Response, error)
}

// Config is the model section of config.json: model.provider, model.name,
// model.base_url, model.api_key_env and model.script. The runtime package
// turns it into a Provider.
type Config struct {
	Provider  string
	Model     string
	BaseURL   string
	APIKeyEnv string
	// Script is the scripted provider's script file (a path or a file://
	// URL); the other providers ignore it.
	Script string
}
