package contracts_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
)

// A cannedServer stands in for `openprogram mcp serve` in the client tests
// and examples: the six tools from contracts.Tools(), arguments checked with
// contracts.Validate, canned answers keyed by the arguments.
type handler func(ctx context.Context, req *mcp.CallToolRequest, args contracts.Args) (*mcp.CallToolResult, error)

const (
	sessionOK      = "mcp_0123456789abcdef0123456789abcdef"
	sessionMissing = "mcp_missing"
	sessionBroken  = "mcp_broken"
	sessionUnknown = "mcp_unknown"  // prompt_send: -32602 invalid MCP prompt session
	sessionBusy    = "mcp_busy"     // prompt_send: isError prompt execution failed, reason busy
	sessionCancel  = "mcp_cancel"   // prompt_send: JSON-RPC 0 Request cancelled
	sessionRunning = "mcp_running"  // prompt_cancel: cancelled true
	sessionTwo     = "mcp_two"      // session_get: two text contents
	sessionImage   = "mcp_image"    // session_get: an image instead of text
	sessionNotJSON = "mcp_not_json" // session_get: text that is not JSON
)

var pngBytes = []byte("\x89PNG\r\n\x1a\n")

func cannedHandlers() map[string]handler {
	return map[string]handler{
		contracts.SessionsList: func(context.Context, *mcp.CallToolRequest, contracts.Args) (*mcp.CallToolResult, error) {
			return contracts.TextResult([]contracts.SessionSummary{{ID: sessionOK, Title: "Greeting", UpdatedAt: 1700000000}})
		},
		contracts.SessionGet: func(_ context.Context, _ *mcp.CallToolRequest, args contracts.Args) (*mcp.CallToolResult, error) {
			switch args.(contracts.SessionGetArgs).SessionID {
			case sessionOK:
				return contracts.TextResult([]contracts.Message{
					{ID: "m1", Role: "user", Content: "Say hello", Timestamp: 1700000000},
					{ID: "m2", Role: "assistant", Content: "Hello! 👋", Timestamp: 1700000001},
				})
			case sessionBroken:
				return contracts.ErrorResult(contracts.ErrorPayload{Error: contracts.TextSessionDataUnavailable}), nil
			case sessionTwo:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "[]"}, &mcp.TextContent{Text: "[]"}}}, nil
			case sessionImage:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: pngBytes, MIMEType: "image/png"}}}, nil
			case sessionNotJSON:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not json"}}}, nil
			default:
				return contracts.ErrorResult(contracts.ErrorPayload{Error: contracts.TextSessionNotFound}), nil
			}
		},
		contracts.PromptSend: func(ctx context.Context, req *mcp.CallToolRequest, args contracts.Args) (*mcp.CallToolResult, error) {
			a := args.(contracts.PromptSendArgs)
			id := a.SessionID
			switch id {
			case sessionUnknown:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: contracts.TextInvalidPromptSession}
			case sessionBusy:
				return contracts.ErrorResult(contracts.ErrorPayload{Error: contracts.TextPromptExecutionFailed, Reason: "session_busy"}), nil
			case sessionCancel:
				return nil, &jsonrpc.Error{Code: 0, Message: contracts.TextRequestCancelled}
			case "":
				id = sessionOK
			}
			if err := sendProgress(ctx, req, "turn started", "tool memory_search finished", "turn finished"); err != nil {
				return nil, err
			}
			return contracts.TextResult(contracts.PromptSendResult{
				SessionID: id, Text: "Hello! You said: " + a.Prompt, AssistantMsgID: "m2",
			})
		},
		contracts.PromptCancel: func(_ context.Context, _ *mcp.CallToolRequest, args contracts.Args) (*mcp.CallToolResult, error) {
			id := args.(contracts.PromptCancelArgs).SessionID
			return contracts.TextResult(contracts.PromptCancelResult{SessionID: id, Cancelled: id == sessionRunning})
		},
		contracts.ToolsList: func(context.Context, *mcp.CallToolRequest, contracts.Args) (*mcp.CallToolResult, error) {
			return contracts.TextResult([]contracts.RuntimeTool{{
				Name:        "memory_search",
				Description: "Search memory.",
				InputSchema: json.RawMessage(`{"properties":{"query":{"type":"string"}},"required":["query"],"type":"object"}`),
			}})
		},
		contracts.ToolCall: func(ctx context.Context, req *mcp.CallToolRequest, args contracts.Args) (*mcp.CallToolResult, error) {
			a := args.(contracts.ToolCallArgs)
			inner := a.Arguments
			switch a.Name {
			case "echo":
				if err := sendProgress(ctx, req, "reading", "done"); err != nil {
					return nil, err
				}
				text, err := contracts.EncodePayload(inner)
				if err != nil {
					return nil, err
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
			case "screenshot":
				return &mcp.CallToolResult{Content: []mcp.Content{
					&mcp.TextContent{Text: "one image"},
					&mcp.ImageContent{Data: pngBytes, MIMEType: "image/png"},
				}}, nil
			case "bash":
				return textError(contracts.TextDeniedHardConstraint), nil
			case "read":
				return textError(contracts.TextDeniedCapabilityPrefix + "fs.read"), nil
			case "failing":
				return textError(contracts.TextRuntimeToolFailed), nil
			case "memory_search":
				if _, ok := inner["query"].(string); !ok {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: contracts.TextInvalidRuntimeToolArguments}
				}
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "no hits"}}}, nil
			default:
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: contracts.TextRuntimeToolNotFound}
			}
		},
	}
}

func textError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// sendProgress sends one notification per message when the request asked
// for progress, then pings the client. go-sdk's client handles incoming
// messages in order, so the ping's answer proves every notification reached
// the client's handler before the result does, which keeps the output of
// tests and examples deterministic.
func sendProgress(ctx context.Context, req *mcp.CallToolRequest, messages ...string) error {
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	for i, msg := range messages {
		err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: float64(i + 1), Message: msg,
		})
		if err != nil {
			return fmt.Errorf("notify progress: %w", err)
		}
	}
	return req.Session.Ping(ctx, nil)
}

// newCannedServer returns a server with the six tools; handlers not given
// in overrides answer as cannedHandlers does.
func newCannedServer(overrides map[string]handler) *mcp.Server {
	handlers := cannedHandlers()
	for name, h := range overrides {
		handlers[name] = h
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "openprogram", Version: "test"},
		&mcp.ServerOptions{SupportedProtocolVersions: contracts.SupportedProtocolVersions()})
	for _, tool := range contracts.Tools() {
		h := handlers[tool.Name]
		srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			args, err := contracts.Validate(req.Params.Name, req.Params.Arguments)
			if err != nil {
				return nil, err
			}
			return h(ctx, req, args)
		})
	}
	return srv
}
