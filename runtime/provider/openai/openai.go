// Package openai is the OpenAI-compatible Chat Completions provider: the
// OpenAI API itself and every server that speaks its wire format (Ollama,
// vLLM, llama.cpp, LM Studio, OpenRouter), selected by the base URL.
//
// Replies are streamed; tool calls arrive as function tool calls. The
// client never reads the OPENAI_* environment variables itself: the key,
// base URL and model come only from [Options], and the SDK's own retries are
// off so that [provider.WithRetry] is the one retry policy.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/internal/wire"
	"github.com/openprogram/openprogram/runtime/secretenv"
)

// DefaultBaseURL is the OpenAI API, used when Options.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// DefaultKeyEnv is the environment variable the key is read from when
// model.api_key_env is not set.
const DefaultKeyEnv = secretenv.OpenAIKey

// Options configure a Provider. BaseURL ends in /v1 for most servers; a
// query in it (Azure's ?api-version=...) is sent with every request.
// APIKey is sent as a bearer token; it may be empty only for a loopback
// BaseURL (see [KeyRequired]) or when Keyless is set.
type Options = provider.Endpoint

// Provider streams Chat Completions. It is safe for concurrent use.
type Provider struct {
	model    string
	baseURL  string
	settings provider.Settings // without Headers: only the request options hold them
	chat     oai.ChatCompletionService
}

// sdk binds the OpenAI SDK to wire.Open.
var sdk = wire.SDK[option.RequestOption]{
	Name: "openai", DefaultBaseURL: DefaultBaseURL,
	BaseURL: option.WithBaseURL, APIKey: option.WithAPIKey, Header: option.WithHeader, QueryAdd: option.WithQueryAdd,
	HTTPClient: func(c *http.Client) option.RequestOption { return option.WithHTTPClient(c) },
	MaxRetries: option.WithMaxRetries, Middleware: option.WithMiddleware,
}

// KeyRequired reports whether a server at baseURL ("" for the OpenAI API)
// needs an API key: every server does except one on a loopback address
// (localhost, 127.0.0.0/8, ::1), where local model servers run without one.
func KeyRequired(baseURL string) bool {
	if baseURL == "" {
		return true
	}
	return !wire.IsLoopback(baseURL)
}

// New returns a Provider for opts. It fails when the model is missing, the
// base URL is not an http(s) URL, or the key is missing where one is needed;
// errors never contain the key.
func New(opts Options) (*Provider, error) {
	end, err := wire.Open(sdk, opts)
	if err != nil {
		return nil, err
	}
	if opts.APIKey == "" && !opts.Keyless && KeyRequired(opts.BaseURL) {
		return nil, errors.New("openai provider: no API key for a non-loopback base URL")
	}
	return &Provider{
		model:    opts.Model,
		baseURL:  end.BaseURL,
		settings: end.Settings,
		// The service, unlike oai.NewClient, reads nothing from the environment.
		chat: oai.NewChatCompletionService(end.Options...),
	}, nil
}

// Name returns "openai".
func (p *Provider) Name() string { return "openai" }

// Stream sends req as one streamed Chat Completions request.
func (p *Provider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	reply := wire.NewReply(onDelta)
	each := func(chunk oai.ChatCompletionChunk) {
		if u := chunk.Usage; u.JSON.PromptTokens.Valid() || u.JSON.CompletionTokens.Valid() {
			// With stream_options.include_usage the last chunk holds it.
			reply.Usage = &provider.Usage{InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens)}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue // one choice is requested; ignore any other
			}
			reply.Text(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				c := reply.Call(tc.Index)
				// Some servers send every call whole at index 0; a new id
				// at a known index starts a new call.
				if c == nil || (tc.ID != "" && c.ID != "" && tc.ID != c.ID) {
					c = reply.NewCall(tc.Index, "", "")
				}
				if tc.ID != "" {
					c.ID = tc.ID
				}
				c.Name += tc.Function.Name
				c.Args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				reply.Stop, reply.Done = ch.FinishReason, true
			}
		}
	}
	err := wire.Stream(ctx, p.settings.Timeout, func() (oai.ChatCompletionNewParams, error) { return p.params(req) },
		func(ctx context.Context, params oai.ChatCompletionNewParams) wire.Events[oai.ChatCompletionChunk] {
			return p.chat.NewStreaming(ctx, params)
		}, each, classify, reply,
		"the stream ended before the reply finished (no finish_reason; does the server stream?)")
	if err != nil {
		return provider.Response{}, err
	}
	resp := reply.Response(stopReasons)
	for i := range resp.ToolCalls {
		if resp.ToolCalls[i].ID == "" {
			resp.ToolCalls[i].ID = fmt.Sprintf("call_%d", i)
		}
	}
	if len(resp.ToolCalls) > 0 && resp.StopReason == provider.StopEnd {
		// Some servers say "stop" while returning calls; the calls win.
		resp.StopReason = provider.StopToolUse
	}
	return resp, nil
}

// stopReasons maps the API's finish reasons to the provider.Stop* ones.
var stopReasons = map[string]string{
	"stop": provider.StopEnd, "length": provider.StopMaxTokens,
	"tool_calls": provider.StopToolUse, "function_call": provider.StopToolUse,
}

func (p *Provider) params(req provider.Request) (oai.ChatCompletionNewParams, error) {
	params := oai.ChatCompletionNewParams{Model: shared.ChatModel(wire.Model(req, p.model)),
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}}
	if t := p.settings.Temperature; t != nil {
		params.Temperature = param.NewOpt(*t)
	}
	if t := p.settings.TopP; t != nil {
		params.TopP = param.NewOpt(*t)
	}
	if req.System != "" {
		params.Messages = append(params.Messages, oai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case provider.RoleSystem:
			params.Messages = append(params.Messages, oai.SystemMessage(m.Content))
		case provider.RoleUser:
			params.Messages = append(params.Messages, oai.UserMessage(m.Content))
		case provider.RoleAssistant:
			var a oai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: string(tc.Arguments)},
					},
				})
			}
			params.Messages = append(params.Messages, oai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case provider.RoleTool:
			params.Messages = append(params.Messages, oai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return params, fmt.Errorf("message role %q is not one of system, user, assistant, tool", m.Role)
		}
	}
	for _, t := range req.Tools {
		var schema shared.FunctionParameters
		if len(t.InputSchema) > 0 {
			if err := json.Unmarshal(t.InputSchema, &schema); err != nil {
				return params, fmt.Errorf("input schema of tool %q: %w", t.Name, err)
			}
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		params.Tools = append(params.Tools, oai.ChatCompletionFunctionTool(fn))
	}
	if maxTokens := wire.MaxTokens(req, p.settings); maxTokens > 0 {
		// The OpenAI API wants max_completion_tokens; most compatible
		// servers still read only max_tokens.
		if p.baseURL == DefaultBaseURL {
			params.MaxCompletionTokens = param.NewOpt(int64(maxTokens))
		} else {
			params.MaxTokens = param.NewOpt(int64(maxTokens))
		}
	}
	return params, nil
}

// classify turns an SDK error into a [*provider.Error], or returns nil
// for an error that is not the SDK's (see wire.StreamError).
func classify(err error) *provider.Error {
	if apiErr, ok := errors.AsType[*oai.Error](err); ok {
		// ErrorMiddleware handles error responses; this is a fallback.
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		return wire.HTTPError(apiErr.StatusCode, h, []byte(apiErr.RawJSON()))
	}
	if se, ok := errors.AsType[*ssestream.StreamError](err); ok {
		return wire.EventError(0, wire.ParseBody(se.Event.Data))
	}
	return nil
}
