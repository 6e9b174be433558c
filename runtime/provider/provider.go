package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
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
// delta), the tool calls it requested, in order, why it stopped, and the
// tokens it cost when the server reported them (nil when it did not).
type Response struct {
	Text       string
	ToolCalls  []ToolCall
	StopReason string
	Usage      *Usage
}

// Usage is the token count a server reported for one request: the prompt
// (cached input included) and the reply.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Settings are the generation and transport settings both HTTP providers
// take (config model.temperature, model.top_p, model.max_output_tokens,
// model.timeout, model.headers). A nil or zero field is not sent: the
// server's own default applies.
type Settings struct {
	// Temperature and TopP are sent as they are when not nil.
	Temperature *float64
	TopP        *float64
	// MaxOutputTokens is the reply limit of a request that sets none
	// (Request.MaxTokens 0); 0 means the provider's default.
	MaxOutputTokens int
	// Timeout bounds the silence of one request: the wait for the response
	// headers and every gap between two stream events. 0 means none (the
	// context alone bounds the call). A request that times out fails with
	// [ClassTimeout] and is not retried.
	Timeout time.Duration
	// Headers are added to every request, after the provider's own (so
	// they may replace Authorization, for a gateway). Values are used as
	// they are: expand references with [ExpandHeaders] first.
	Headers map[string]string
	// UserAgent is the User-Agent header ("": [UserAgent] of "dev").
	UserAgent string
	// AllowUnencryptedKey (model.allow_unencrypted_key) lets the key and
	// Headers go over plain http:// to a host that is not this machine,
	// where anyone on the network path can read them. False, the default,
	// refuses such an endpoint ([ErrUnencryptedKey]). This machine is the
	// literal addresses 127.0.0.0/8 and ::1, and the name localhost when
	// the provider's own HTTP client dials it (at 127.0.0.1 and ::1, never
	// asking a resolver); https and a keyless endpoint without Headers
	// need no opt-in.
	AllowUnencryptedKey bool
}

// Endpoint configures an HTTP provider (openai.Options and
// anthropic.Options are this type): the model, where and as whom requests
// are sent, and the settings every request carries.
type Endpoint struct {
	// Model is the model name sent with each request (model.name). Required.
	Model string
	// BaseURL is the API root (model.base_url), an http(s) URL. Empty means
	// the provider's DefaultBaseURL.
	BaseURL string
	// APIKey authenticates the requests, the way the provider's API wants.
	// Whether it may be empty is the provider's to say.
	APIKey string
	// Keyless says the server takes no key (model.api_key_env none, for a
	// server that authenticates otherwise): no key is sent unless Headers
	// send one.
	Keyless bool
	// HTTPClient sends the requests. Nil means a client without an overall
	// timeout (the context and Settings.Timeout bound each call).
	HTTPClient *http.Client
	// Settings are the generation and transport settings; every one that is
	// set appears in each request.
	Settings
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
// model.base_url, model.api_key_env, model.script and the [Settings]. The
// runtime package turns it into a Provider.
type Config struct {
	Provider string
	Model    string
	BaseURL  string
	// APIKeyEnv names the variable holding the key; [KeyEnvNone] means the
	// server takes no key.
	APIKeyEnv string
	// Script is the scripted provider's script file (a path or a file://
	// URL); the other providers ignore it.
	Script string
	// Settings go to the HTTP providers; Headers values may still hold
	// ${NAME} references, expanded when the provider is built. The scripted
	// provider ignores them.
	Settings
	// Version is the build's version, sent in the User-Agent ("": "dev").
	Version string
}

// KeyEnvNone is the model.api_key_env value of a server that takes no key,
// at any URL.
const KeyEnvNone = "none"

// UserAgent returns the User-Agent both HTTP providers send:
// openprogram/<version>, "dev" when version is empty.
func UserAgent(version string) string {
	version = strings.TrimSpace(version)
	if version == "" {
		version = "dev"
	}
	return "openprogram/" + strings.Map(func(r rune) rune {
		if r <= ' ' || r >= 0x7f {
			return '_'
		}
		return r
	}, version)
}
