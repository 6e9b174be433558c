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
	"io"
	"net/http"
	"net/url"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"

	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/runtime/provider/internal/wire"
	"github.com/openprogram/openprogram/runtime/secretenv"
	"github.com/openprogram/openprogram/sessions"
)

// DefaultBaseURL is the OpenAI API, used when Options.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1/"

// DefaultKeyEnv is the environment variable the key is read from when
// model.api_key_env is not set.
const DefaultKeyEnv = secretenv.OpenAIKey

// Options configure a Provider.
type Options struct {
	// Model is the model name sent with each request (model.name). Required.
	Model string
	// BaseURL is the API root, ending in /v1 for most servers
	// (model.base_url). Empty means [DefaultBaseURL]. A query in it (Azure's
	// ?api-version=...) is sent with every request.
	BaseURL string
	// APIKey is sent as a bearer token. It may be empty only for a loopback
	// BaseURL (see [KeyRequired]) or when Keyless is set.
	APIKey string
	// Keyless says the server takes no key at any URL (model.api_key_env
	// none): no Authorization header is sent unless Headers set one.
	Keyless bool
	// HTTPClient sends the requests. Nil means a client without an overall
	// timeout (the context and Settings.Timeout bound each call).
	HTTPClient *http.Client
	// Settings are the generation and transport settings; every one that is
	// set appears in each request.
	provider.Settings
}

// Provider streams Chat Completions. It is safe for concurrent use.
type Provider struct {
	model    string
	baseURL  string
	settings provider.Settings // without Headers: only the request options hold them
	chat     oai.ChatCompletionService
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
	if strings.TrimSpace(opts.Model) == "" {
		return nil, errors.New("openai provider: model name is empty: set model.name")
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai provider: base URL %q is not an http(s) URL: fix model.base_url", sessions.RedactURL(base))
	}
	if opts.APIKey == "" && !opts.Keyless && KeyRequired(opts.BaseURL) {
		return nil, errors.New("openai provider: no API key for a non-loopback base URL")
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = wire.HTTPClient()
	}
	// A query in the base URL (Azure's ?api-version=...) is sent with every
	// request; the SDK would drop it when it appends the path.
	query := u.Query()
	u.RawQuery = ""
	base = u.String()
	reqOpts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithMiddleware(wire.ErrorMiddleware),
	}
	if opts.APIKey != "" {
		reqOpts = append(reqOpts, option.WithAPIKey(opts.APIKey))
	}
	for k, vs := range query {
		for _, v := range vs {
			reqOpts = append(reqOpts, option.WithQueryAdd(k, v))
		}
	}
	reqOpts = append(reqOpts, wire.HeaderOptions(opts.Settings, option.WithHeader)...)
	set := opts.Settings
	set.Headers = nil // in reqOpts already; they may hold keys
	return &Provider{
		model:    opts.Model,
		baseURL:  base,
		settings: set,
		// The service, unlike oai.NewClient, reads nothing from the environment.
		chat: oai.NewChatCompletionService(reqOpts...),
	}, nil
}

// Name returns "openai".
func (p *Provider) Name() string { return "openai" }

// Stream sends req as one streamed Chat Completions request.
func (p *Provider) Stream(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	var (
		reply    = wire.NewReply(onDelta)
		byIndex  = map[int64]*wire.Call{}
		finish   string
		finished bool
		usage    *provider.Usage
	)
	each := func(chunk oai.ChatCompletionChunk) {
		if u := chunk.Usage; u.JSON.PromptTokens.Valid() || u.JSON.CompletionTokens.Valid() {
			// With stream_options.include_usage the last chunk holds it.
			usage = &provider.Usage{InputTokens: int(u.PromptTokens), OutputTokens: int(u.CompletionTokens)}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue // one choice is requested; ignore any other
			}
			reply.Text(ch.Delta.Content)
			for _, tc := range ch.Delta.ToolCalls {
				c := byIndex[tc.Index]
				// Some servers send every call whole at index 0; a new id
				// at a known index starts a new call.
				if c == nil || (tc.ID != "" && c.ID != "" && tc.ID != c.ID) {
					c = reply.NewCall("", "")
					byIndex[tc.Index] = c
				}
				if tc.ID != "" {
					c.ID = tc.ID
				}
				c.Name += tc.Function.Name
				c.Args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				finish, finished = ch.FinishReason, true
			}
		}
	}
	err := wire.Stream(ctx, p.settings.Timeout, func() (oai.ChatCompletionNewParams, error) { return p.params(req) },
		func(ctx context.Context, params oai.ChatCompletionNewParams) wire.Events[oai.ChatCompletionChunk] {
			return p.chat.NewStreaming(ctx, params)
		}, each, classify, func() bool { return finished },
		"the stream ended before the reply finished (no finish_reason; does the server stream?)")
	if err != nil {
		return provider.Response{}, err
	}
	resp := reply.Response(stopReason(finish), usage)
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

func stopReason(finish string) string {
	switch finish {
	case "stop":
		return provider.StopEnd
	case "tool_calls", "function_call":
		return provider.StopToolUse
	case "length":
		return provider.StopMaxTokens
	}
	return finish
}

func (p *Provider) params(req provider.Request) (oai.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	params := oai.ChatCompletionNewParams{Model: shared.ChatModel(model),
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
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.settings.MaxOutputTokens
	}
	if maxTokens > 0 {
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

// classify turns an SDK error into a [*provider.Error].
func classify(ctx context.Context, err error) *provider.Error {
	if ctx.Err() != nil {
		return provider.Cancelled(ctx)
	}
	if apiErr, ok := errors.AsType[*oai.Error](err); ok {
		// ErrorMiddleware handles error responses; this is a fallback.
		var h http.Header
		if apiErr.Response != nil {
			h = apiErr.Response.Header
		}
		return wire.HTTPError(apiErr.StatusCode, h, []byte(apiErr.RawJSON()))
	}
	if se, ok := errors.AsType[*ssestream.StreamError](err); ok {
		b := wire.ParseBody(se.Event.Data)
		msg := b.Message
		if msg == "" {
			msg = "error event in the stream"
		}
		return &provider.Error{Class: wire.Classify(0, b), Err: errors.New(msg)}
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return wire.TransportError(ctx, err)
}
