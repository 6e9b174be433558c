// Package anthropic is the Anthropic Messages API provider, streaming, with
// tool use.
//
// The client never reads the ANTHROPIC_* environment variables or profile
// files itself: the key, base URL and model come only from [Options], and the
// SDK's own retries are off so that [provider.WithRetry] is the one retry
// policy.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	ant "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/internal/wire"
	"github.com/openprogram/openprogram/runtime/secretenv"
)

// DefaultBaseURL is the Anthropic API root, used when Options.BaseURL is
// empty. A custom base URL is the root too: requests go to <base>/v1/messages.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultKeyEnv is the environment variable the key is read from when
// model.api_key_env is not set.
const DefaultKeyEnv = secretenv.AnthropicKey

// DefaultMaxTokens is the output limit sent when a request sets none (the
// Messages API requires one).
const DefaultMaxTokens = 8192

// Options configure a Provider. APIKey is sent as x-api-key and is
// required unless Keyless is set. Settings.MaxOutputTokens 0 means
// [DefaultMaxTokens] (the API requires a limit).
type Options = provider.Endpoint

// Provider streams Messages API replies. It is safe for concurrent use.
type Provider struct {
	model    string
	settings provider.Settings // without Headers: only the request options hold them
	messages ant.MessageService
}

// sdk binds the Anthropic SDK to wire.Open.
var sdk = wire.SDK[option.RequestOption]{
	Name: "anthropic", DefaultBaseURL: DefaultBaseURL,
	BaseURL: option.WithBaseURL, APIKey: option.WithAPIKey, Header: option.WithHeader,
	HTTPClient: func(c *http.Client) option.RequestOption { return option.WithHTTPClient(c) },
	MaxRetries: option.WithMaxRetries, Middleware: option.WithMiddleware,
}

// New returns a Provider for opts. It fails when the model or key is
// missing or the base URL is not an http(s) URL; errors never contain the key.
func New(opts Options) (*Provider, error) {
	end, err := wire.Open(sdk, opts)
	if err != nil {
		return nil, err
	}
	if opts.APIKey == "" && !opts.Keyless {
		return nil, errors.New("anthropic provider: no API key")
	}
	if err := Unsupported(opts.Settings); err != nil {
		return nil, err
	}
	return &Provider{
		model:    opts.Model,
		settings: end.Settings,
		// The service, unlike ant.NewClient, reads nothing from the
		// environment or the user's profile files.
		messages: ant.NewMessageService(end.Options...),
	}, nil
}

// Unsupported returns why s cannot be honoured by the Messages API, or nil:
// API version 2026-10-21, which this SDK sends, answers 400 to any
// temperature or top_p, so neither may be set.
func Unsupported(s provider.Settings) error {
	switch {
	case s.Temperature != nil:
		return errors.New("anthropic provider: the Messages API (version 2026-10-21) rejects temperature: unset model.temperature")
	case s.TopP != nil:
		return errors.New("anthropic provider: the Messages API (version 2026-10-21) rejects top_p: unset model.top_p")
	}
	return nil
}

// Name returns "anthropic".
func (p *Provider) Name() string { return "anthropic" }

// Stream sends req as one streamed Messages request.
func (p *Provider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	reply := wire.NewReply(onDelta)
	each := func(ev ant.MessageStreamEventUnion) {
		switch ev.Type {
		case "message_start":
			if u := ev.Message.Usage; u.JSON.InputTokens.Valid() {
				reply.Usage = &provider.Usage{
					InputTokens:  int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
					OutputTokens: int(u.OutputTokens),
				}
			}
		case "content_block_start":
			switch ev.ContentBlock.Type {
			case "text":
				reply.Text(ev.ContentBlock.Text)
			case "tool_use":
				reply.NewCall(ev.Index, ev.ContentBlock.ID, ev.ContentBlock.Name)
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				reply.Text(ev.Delta.Text)
			case "input_json_delta":
				if c := reply.Call(ev.Index); c != nil {
					c.Args.WriteString(ev.Delta.PartialJSON)
				}
			}
		case "message_delta":
			if ev.Delta.StopReason != "" {
				reply.Stop = string(ev.Delta.StopReason)
			}
			if u := ev.Usage; u.JSON.OutputTokens.Valid() {
				// The count is cumulative: the last one is the reply's.
				if reply.Usage == nil {
					reply.Usage = &provider.Usage{}
				}
				reply.Usage.OutputTokens = int(u.OutputTokens)
			}
		case "message_stop":
			reply.Done = true
		}
	}
	err := wire.Stream(ctx, p.settings.Timeout, func() (ant.MessageNewParams, error) { return p.params(req) },
		func(ctx context.Context, params ant.MessageNewParams) wire.Events[ant.MessageStreamEventUnion] {
			return p.messages.NewStreaming(ctx, params)
		}, each, classify, reply, "the stream ended before message_stop")
	if err != nil {
		return provider.Response{}, err
	}
	return reply.Response(stopReasons), nil
}

// stopReasons maps the API's stop reasons to the provider.Stop* ones.
var stopReasons = map[string]string{
	"end_turn": provider.StopEnd, "stop_sequence": provider.StopEnd,
	"tool_use": provider.StopToolUse, "max_tokens": provider.StopMaxTokens,
}

func (p *Provider) params(req provider.Request) (ant.MessageNewParams, error) {
	maxTokens := wire.MaxTokens(req, p.settings)
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	params := ant.MessageNewParams{Model: wire.Model(req, p.model), MaxTokens: int64(maxTokens)}
	system := []string{}
	if req.System != "" {
		system = append(system, req.System)
	}

	// The Messages API wants alternating user and assistant turns, with tool
	// results as user content: merge neighbours that map to the same role.
	var (
		role   string
		blocks []ant.ContentBlockParamUnion
	)
	flush := func() {
		if len(blocks) == 0 {
			return
		}
		if role == provider.RoleAssistant {
			params.Messages = append(params.Messages, ant.NewAssistantMessage(blocks...))
		} else {
			params.Messages = append(params.Messages, ant.NewUserMessage(blocks...))
		}
		blocks = nil
	}
	add := func(r string, b ant.ContentBlockParamUnion) {
		if r != role {
			flush()
			role = r
		}
		blocks = append(blocks, b)
	}
	for _, m := range req.Messages {
		switch m.Role {
		case provider.RoleSystem:
			if m.Content != "" {
				system = append(system, m.Content)
			}
		case provider.RoleUser:
			if m.Content != "" {
				add(provider.RoleUser, ant.NewTextBlock(m.Content))
			}
		case provider.RoleAssistant:
			if m.Content != "" {
				add(provider.RoleAssistant, ant.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				add(provider.RoleAssistant, ant.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
			}
		case provider.RoleTool:
			r := ant.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.IsError {
				r.IsError = param.NewOpt(true)
			}
			if m.Content != "" {
				r.Content = []ant.ToolResultBlockParamContentUnion{{OfText: &ant.TextBlockParam{Text: m.Content}}}
			}
			add(provider.RoleUser, ant.ContentBlockParamUnion{OfToolResult: &r})
		default:
			return params, fmt.Errorf("message role %q is not one of system, user, assistant, tool", m.Role)
		}
	}
	flush()
	for _, s := range system {
		params.System = append(params.System, ant.TextBlockParam{Text: s})
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.InputSchema)
		if err != nil {
			return params, fmt.Errorf("input schema of tool %q: %w", t.Name, err)
		}
		tp := ant.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = param.NewOpt(t.Description)
		}
		params.Tools = append(params.Tools, ant.ToolUnionParam{OfTool: &tp})
	}
	return params, nil
}

// toolInput returns the arguments of a past tool call as the object the API
// wants; arguments that were not a JSON object are sent as an empty one (the
// tool result that follows already told the model they were invalid).
func toolInput(args json.RawMessage) any {
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) != nil || obj == nil {
		return map[string]any{}
	}
	return args
}

func inputSchema(raw json.RawMessage) (ant.ToolInputSchemaParam, error) {
	var s ant.ToolInputSchemaParam
	if len(raw) == 0 {
		return s, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return s, err
	}
	if props, ok := m["properties"]; ok {
		s.Properties = props
	}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	for k, v := range m {
		switch k {
		case "type", "properties", "required":
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}

const streamErrPrefix = "received error while streaming: "

// classify turns an SDK error into a [*provider.Error], or returns nil
// for an error that is not the SDK's (see wire.StreamError).
func classify(err error) *provider.Error {
	if apiErr, ok := errors.AsType[*ant.Error](err); ok {
		// An error event inside a stream (HTTP error responses are handled
		// by ErrorMiddleware before the SDK sees them).
		b := wire.ParseBody([]byte(apiErr.RawJSON()))
		if b.Type == "" {
			b.Type = string(apiErr.Type())
		}
		if b.Message == "" {
			b.Message = apiErr.Message
		}
		status := apiErr.StatusCode
		if status < 400 {
			status = 0
		}
		return wire.EventError(status, b)
	}
	if data, ok := strings.CutPrefix(err.Error(), streamErrPrefix); ok {
		return wire.EventError(0, wire.ParseBody([]byte(data)))
	}
	return nil
}
