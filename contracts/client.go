package contracts

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client calls the six tools of an OpenProgram MCP server over a connected
// go-sdk session and decodes their payloads. It is safe for concurrent use.
//
// Every method returns a *[ToolError] when the server answers with an isError
// result and a *[ProtocolError] when it answers with a JSON-RPC error
// (unknown tool, invalid arguments, cancelled request). Other failures
// (context cancellation, a closed connection, an unexpected result shape)
// are returned wrapped as they come.
type Client struct {
	cs *mcp.ClientSession
}

// NewClient returns a Client that calls tools over cs. To receive progress
// with [WithProgress], the mcp.Client behind cs must have been created with
// [HandleProgress] as its ProgressNotificationHandler.
func NewClient(cs *mcp.ClientSession) *Client {
	return &Client{cs: cs}
}

// CallOption configures one tool call.
type CallOption func(*callOptions)

type callOptions struct {
	progress func(progress float64, message string)
}

// WithProgress asks the server for progress notifications and passes each to
// fn, in order, on go-sdk's notification goroutine. fn must not block for
// long. It is never called after the method it was given to has returned; a
// notification that go-sdk hands over after the result has arrived is
// dropped.
func WithProgress(fn func(progress float64, message string)) CallOption {
	return func(o *callOptions) { o.progress = fn }
}

// SessionsList calls sessions_list.
func (c *Client) SessionsList(ctx context.Context) ([]SessionSummary, error) {
	var out []SessionSummary
	if err := c.callDecode(ctx, SessionsList, SessionsListArgs{}, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// SessionGet calls session_get.
func (c *Client) SessionGet(ctx context.Context, sessionID string) ([]Message, error) {
	var out []Message
	if err := c.callDecode(ctx, SessionGet, SessionGetArgs{SessionID: sessionID}, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// PromptSend calls prompt_send. A turn that failed is a normal result with
// Failed set, not an error.
func (c *Client) PromptSend(ctx context.Context, args PromptSendArgs, opts ...CallOption) (PromptSendResult, error) {
	var out PromptSendResult
	if err := c.callDecode(ctx, PromptSend, args, opts, &out); err != nil {
		return PromptSendResult{}, err
	}
	return out, nil
}

// PromptCancel calls prompt_cancel.
func (c *Client) PromptCancel(ctx context.Context, sessionID string) (PromptCancelResult, error) {
	var out PromptCancelResult
	if err := c.callDecode(ctx, PromptCancel, PromptCancelArgs{SessionID: sessionID}, nil, &out); err != nil {
		return PromptCancelResult{}, err
	}
	return out, nil
}

// ToolsList calls tools_list.
func (c *Client) ToolsList(ctx context.Context) ([]RuntimeTool, error) {
	var out []RuntimeTool
	if err := c.callDecode(ctx, ToolsList, ToolsListArgs{}, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ToolCall calls tool_call to run the runtime tool name with args (nil means
// {}), and returns the runtime tool's own content: *mcp.TextContent and
// *mcp.ImageContent values. A gate denial or a failed runtime tool is a
// *[ToolError] whose Text is the fixed text, for example
// [TextDeniedHardConstraint].
func (c *Client) ToolCall(ctx context.Context, name string, args map[string]any, opts ...CallOption) ([]mcp.Content, error) {
	res, err := c.call(ctx, ToolCall, ToolCallArgs{Name: name, Arguments: args}, opts)
	if err != nil {
		return nil, err
	}
	return res.Content, nil
}

func (c *Client) callDecode(ctx context.Context, tool string, args any, opts []CallOption, v any) error {
	res, err := c.call(ctx, tool, args, opts)
	if err != nil {
		return err
	}
	if len(res.Content) != 1 {
		return fmt.Errorf("%s: want one text content in the result, got %d contents", tool, len(res.Content))
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return fmt.Errorf("%s: want one text content in the result, got %T", tool, res.Content[0])
	}
	if err := DecodePayload(text.Text, v); err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	return nil
}

func (c *Client) call(ctx context.Context, tool string, args any, opts []CallOption) (*mcp.CallToolResult, error) {
	var o callOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if o.progress != nil {
		token, unregister := registerProgress(c.cs, o.progress)
		defer unregister()
		params.SetProgressToken(token)
	}
	res, err := c.cs.CallTool(ctx, params)
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return nil, &ProtocolError{Code: werr.Code, Message: werr.Message}
		}
		return nil, fmt.Errorf("call %s: %w", tool, err)
	}
	if res.IsError {
		return nil, newToolError(res)
	}
	return res, nil
}

// ToolError is an isError result: the server ran the call and reports that
// it failed (session not found, prompt execution failed, a gate denial, a
// failed runtime tool, ...).
type ToolError struct {
	// Text is the result's text content (several texts are joined with
	// newlines).
	Text string
	// Payload is Text decoded, when Text is an [ErrorPayload] JSON object
	// with a non-empty "error"; nil for plain-text errors such as gate
	// denials.
	Payload *ErrorPayload
}

func newToolError(res *mcp.CallToolResult) *ToolError {
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	e := &ToolError{Text: strings.Join(texts, "\n")}
	var p ErrorPayload
	if strings.HasPrefix(e.Text, "{") && DecodePayload(e.Text, &p) == nil && p.Error != "" {
		e.Payload = &p
	}
	return e
}

// Error returns the error text, with the reason in parentheses when the
// payload has one.
func (e *ToolError) Error() string {
	if e.Payload != nil {
		if e.Payload.Reason != "" {
			return "openprogram tool error: " + e.Payload.Error + " (" + e.Payload.Reason + ")"
		}
		return "openprogram tool error: " + e.Payload.Error
	}
	return "openprogram tool error: " + e.Text
}

// ProtocolError is a JSON-RPC error response, for example code -32601 for an
// unknown tool, -32602 for invalid arguments, or 0 with [TextRequestCancelled]
// for a cancelled request.
type ProtocolError struct {
	Code    int64
	Message string
}

// Error returns the code and message.
func (e *ProtocolError) Error() string {
	return fmt.Sprintf("openprogram protocol error %d: %s", e.Code, e.Message)
}

// Progress routing. go-sdk delivers notifications/progress only to the
// handler set in mcp.ClientOptions, which a Client built over an existing
// session cannot change, so [HandleProgress] looks the token up here.
type progressKey struct {
	cs    *mcp.ClientSession
	token string
}

type progressSink struct {
	mu     sync.Mutex
	closed bool
	fn     func(float64, string)
}

var progressSinks struct {
	mu   sync.Mutex
	next uint64
	m    map[progressKey]*progressSink
}

func registerProgress(cs *mcp.ClientSession, fn func(float64, string)) (token string, unregister func()) {
	progressSinks.mu.Lock()
	defer progressSinks.mu.Unlock()
	progressSinks.next++
	token = "openprogram-contracts-" + strconv.FormatUint(progressSinks.next, 10)
	key := progressKey{cs, token}
	sink := &progressSink{fn: fn}
	if progressSinks.m == nil {
		progressSinks.m = make(map[progressKey]*progressSink)
	}
	progressSinks.m[key] = sink
	return token, func() {
		progressSinks.mu.Lock()
		delete(progressSinks.m, key)
		progressSinks.mu.Unlock()
		// Wait for a callback in flight, and stop later ones.
		sink.mu.Lock()
		sink.closed = true
		sink.mu.Unlock()
	}
}

// HandleProgress routes notifications/progress to the callbacks given with
// [WithProgress]. Set it as the mcp.ClientOptions.ProgressNotificationHandler
// of the client whose sessions you pass to [NewClient], or call it from your
// own handler: it ignores notifications whose token it did not issue.
func HandleProgress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	progressSinks.mu.Lock()
	sink := progressSinks.m[progressKey{req.Session, token}]
	progressSinks.mu.Unlock()
	if sink == nil {
		return
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if !sink.closed {
		sink.fn(req.Params.Progress, req.Params.Message)
	}
}
