package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/openprogram/openprogram/internal/clip"
	"github.com/openprogram/openprogram/runtime/conversation"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
	"github.com/openprogram/openprogram/mcpserver/internal/stdio"
)

// errRequestCancelled answers a request whose work was cancelled.
var errRequestCancelled = &jsonrpc.Error{Code: stdio.CodeRequestCancelled, Message: contracts.TextRequestCancelled}

// connection is the state of one Serve call: the client's line into the
// conversation service (its running prompt_send turns), the wire, and the
// task watchers.
type connection struct {
	s    *Server
	line *conversation.Line

	// conn is the wire; done is closed when the connection stops, ending
	// the task watchers counted in watchers.
	conn     *stdio.Conn
	done     chan struct{}
	watchers sync.WaitGroup

	// startAudited is closed once the mcp.server.start record is written
	// (or failed). Serve writes it while the session starts; tools/call
	// requests and the stop record wait for it, so it stays the first
	// record of the connection.
	startAudited chan struct{}
}

func newConnection(s *Server) (*connection, error) {
	line, err := s.conv.Open(s.speaker, nil)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: open the client's line: %w", err)
	}
	return &connection{s: s, line: line, startAudited: make(chan struct{}), done: make(chan struct{})}, nil
}

// stop ends the task watchers.
func (c *connection) stop() {
	close(c.done)
	c.watchers.Wait()
}

// middleware wraps every request go-sdk dispatches in its server span
// (telemetry.go): it recovers panics,
// validates tools/call arguments against the frozen schemas before any
// handler runs (so -32601/-32602 reach the wire as JSON-RPC errors), keeps
// tools/list in contract order, and answers cancelled calls with the code-0
// cancellation error.
func (c *connection) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	handle := c.handle(next)
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		ctx, span := c.startRequestSpan(ctx, method, req)
		res, err := handle(ctx, method, req)
		c.endRequestSpan(ctx, span, start, method, req, res, err)
		return res, err
	}
}

// handle is the middleware's work on one request, inside its span.
func (c *connection) handle(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		defer func() {
			if p := recover(); p != nil {
				c.s.log.Error("MCP handler panicked", "method", method, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				if method == "tools/call" {
					res, err = executionFailed(), nil
				} else {
					res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
				}
			}
			if ctx.Err() != nil && method == "tools/call" {
				res, err = nil, errRequestCancelled
			}
			var werr *jsonrpc.Error
			if r := stdio.RequestOf(req); r != nil && errors.As(err, &werr) {
				// go-sdk rewrites -32601 messages; the connection restores ours.
				r.SetError(werr)
			}
		}()
		switch method {
		case "tools/call":
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `invalid params: missing "params"`}
			}
			raw := call.Params.Arguments
			if r := stdio.RequestOf(req); r != nil && r.Detached() != nil {
				raw = r.Detached() // the wire kept them from go-sdk (detachedParams)
			}
			args, verr := contracts.Validate(call.Params.Name, raw)
			if verr != nil {
				return nil, verr
			}
			// From here on the handlers read the validated, typed arguments
			// (withArgs), never the raw ones. Dropping go-sdk's reference
			// frees them only where nothing else holds them: over stdio the
			// connection's record of the request keeps the raw params
			// until the answer is written.
			call.Params.Arguments = nil
			// params.task matters only with task support; without it the
			// request is served normally, as the protocol requires.
			var task *taskParams
			if r := stdio.RequestOf(req); r != nil && c.s.tasks != nil {
				var terr *jsonrpc.Error
				if task, terr = taskOf(r.Params()); terr != nil {
					return nil, terr
				}
				if task != nil && contracts.Execution(call.Params.Name) == nil {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %q does not support task-augmented execution (execution.taskSupport is forbidden)", call.Params.Name)}
				}
			}
			select {
			case <-c.startAudited: // every audit record of a call comes after the start record
			case <-ctx.Done():
				return nil, errRequestCancelled
			}
			if task != nil {
				return c.createTask(withArgs(ctx, args), call, task)
			}
			return next(withArgs(ctx, args), method, req)
		case "initialize":
			if ir, ok := req.(*mcp.ServerRequest[*mcp.InitializeParams]); ok && ir.Params != nil && ir.Params.ClientInfo != nil {
				// Diagnostics only: clientInfo never affects identity or scope.
				c.s.log.Info("MCP client initializing", "client_id", c.s.clientID,
					"client_name", clip.String(ir.Params.ClientInfo.Name, 128), "client_version", clip.String(ir.Params.ClientInfo.Version, 128),
					"protocol_version", clip.String(ir.Params.ProtocolVersion, 128))
			}
			if c.s.tasks != nil {
				res, err = next(ctx, method, req)
				if ir, ok := res.(*mcp.InitializeResult); ok && err == nil {
					return withTaskCapability(ir), nil
				}
				return res, err
			}
		case "tools/list":
			res, err = next(ctx, method, req)
			if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				return contractToolList(list, c.s.tasks != nil), nil
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// listToolsResult is a tools/list result as protocol 2025-11-25 defines
// it. go-sdk's ListToolsResult also carries the 2026-07-28 cache fields
// (ttlMs, cacheScope) on every protocol version.
type listToolsResult struct {
	mcp.ResultBase
	NextCursor string `json:"nextCursor,omitempty"`
	Tools      []any  `json:"tools"` // *mcp.Tool, or *taskTool
}

// taskTool is a tool definition with its execution member (see
// contracts.Execution), sent only by a server with task support.
type taskTool struct {
	*mcp.Tool
	Execution *contracts.ToolExecution `json:"execution,omitempty"`
}

// initializeResult is the initialize answer of a server with task support:
// go-sdk's, with capabilities.tasks.
type initializeResult struct {
	*mcp.InitializeResult
	Capabilities *taskCapabilities `json:"capabilities"`
}

type taskCapabilities struct {
	*mcp.ServerCapabilities
	Tasks json.RawMessage `json:"tasks"`
}

// withTaskCapability adds capabilities.tasks to go-sdk's initialize answer:
// list, cancel, and task-augmented tools/call.
func withTaskCapability(ir *mcp.InitializeResult) *initializeResult {
	caps := ir.Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	return &initializeResult{InitializeResult: ir, Capabilities: &taskCapabilities{
		ServerCapabilities: caps,
		Tasks:              json.RawMessage(`{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`),
	}}
}

// contractToolList returns list in contract order (go-sdk sorts tools by
// name) without the cache fields; with tasks, each tool that may run as a
// task carries its execution member.
func contractToolList(list *mcp.ListToolsResult, tasks bool) *listToolsResult {
	order := contracts.Names()
	tools := slices.Clone(list.Tools)
	slices.SortStableFunc(tools, func(a, b *mcp.Tool) int {
		return slices.Index(order, a.Name) - slices.Index(order, b.Name)
	})
	out := make([]any, 0, len(tools))
	for _, t := range tools {
		if ex := contracts.Execution(t.Name); tasks && ex != nil {
			out = append(out, &taskTool{Tool: t, Execution: ex})
		} else {
			out = append(out, t)
		}
	}
	return &listToolsResult{ResultBase: mcp.ResultBase{Meta: list.Meta}, NextCursor: list.NextCursor, Tools: out}
}

type argsKey struct{}

// heldArgs carries the validated arguments from the middleware to the tool
// handler, which takes them out ([takeArgs]) so that nothing else keeps
// them alive while the call runs (a maximal tool_call argument, say).
type heldArgs struct {
	mu   sync.Mutex
	args contracts.Args
}

// withArgs carries the validated arguments from the middleware to the tool
// handler.
func withArgs(ctx context.Context, args contracts.Args) context.Context {
	return context.WithValue(ctx, argsKey{}, &heldArgs{args: args})
}

// takeArgs returns the validated arguments of the call, of the type A of
// its tool, and lets go of them.
func takeArgs[A contracts.Args](ctx context.Context) (A, error) {
	var zero A
	h, ok := ctx.Value(argsKey{}).(*heldArgs)
	if !ok {
		return zero, errors.New("tool arguments were not validated")
	}
	h.mu.Lock()
	args := h.args
	h.args = nil
	h.mu.Unlock()
	a, ok := args.(A)
	if !ok {
		return zero, fmt.Errorf("tool arguments are %T, not %T", args, zero)
	}
	return a, nil
}

// toolHandler returns the handler of one of the six tools.
func (c *connection) toolHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var (
			res *mcp.CallToolResult
			err error
		)
		switch name {
		case contracts.SessionsList:
			res, err = c.sessionsList(ctx)
		case contracts.SessionGet:
			var a contracts.SessionGetArgs
			if a, err = takeArgs[contracts.SessionGetArgs](ctx); err == nil {
				res, err = c.sessionGet(ctx, req, a.SessionID)
			}
		case contracts.PromptSend:
			var a contracts.PromptSendArgs
			if a, err = takeArgs[contracts.PromptSendArgs](ctx); err == nil {
				res, err = c.promptSend(ctx, req, a)
			}
		case contracts.PromptCancel:
			var a contracts.PromptCancelArgs
			if a, err = takeArgs[contracts.PromptCancelArgs](ctx); err == nil {
				res, err = c.promptCancel(ctx, a.SessionID)
			}
		case contracts.ToolsList:
			res, err = c.toolsList()
		case contracts.ToolCall:
			var a contracts.ToolCallArgs
			if a, err = takeArgs[contracts.ToolCallArgs](ctx); err == nil {
				res, err = c.toolCall(ctx, req, a)
			}
		default:
			err = fmt.Errorf("no handler for tool %q", name)
		}
		var werr *jsonrpc.Error
		if err != nil && !errors.As(err, &werr) {
			// Only protocol errors travel as errors; anything else is an
			// execution error, with details on stderr only.
			c.s.log.ErrorContext(ctx, "MCP tool failed", "tool", name, "error", err)
			return executionFailed(), nil
		}
		return res, err
	}
}

// executionFailed is the isError result of any failure inside a handler.
func executionFailed() *mcp.CallToolResult {
	return textError(contracts.TextToolExecutionFailed)
}

// textError is an isError result holding one text.
func textError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
}

// payloadResult is a successful result holding one JSON payload.
func payloadResult(v any) (*mcp.CallToolResult, error) {
	res, err := contracts.TextResult(v)
	if err != nil {
		return nil, fmt.Errorf("encode payload: %w", err)
	}
	return res, nil
}

// errorPayload is an isError result holding {"error": text[, "reason": r]}.
func errorPayload(text, reason string) *mcp.CallToolResult {
	return contracts.ErrorResult(contracts.ErrorPayload{Error: text, Reason: reason})
}
