// Package tool is the OpenProgram runtime's tool model: what a tool is,
// the [Registry] that holds them and the [Executor] every caller runs them
// through.
//
//	reg := tool.NewRegistry()
//	err := reg.Register(&tool.Func{
//		ToolName: "echo",
//		Desc:     "Echo the text back.",
//		Schema:   json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
//		Cap:      authz.CapReply,
//		Run: func(ctx context.Context, callID string, args json.RawMessage, update func(string)) (tool.Result, error) {
//			var a struct{ Text string }
//			if err := json.Unmarshal(args, &a); err != nil {
//				return tool.Result{}, err
//			}
//			return tool.TextResult(a.Text), nil
//		},
//	})
//	t, _ := reg.Get("echo")
//	res := tool.NewExecutor(nil).Execute(ctx, t, "call-1", json.RawMessage(`{"text":"hi"}`), nil)
//
// # Results
//
// A [Result] holds text or image [Content]. [Result.IsError] is the only
// failure flag: invalid arguments, returned errors, panics, timeouts,
// cancellations, denials and failures a tool reports all set it.
// [Result.Reason], [Result.Denied] and [Result.InvalidArguments] say why,
// typed; [Result.Details] carries diagnostics (timeout, cancelled,
// truncated, a tool's exit code) and is never the source of truth.
//
// # Schemas
//
// Input schemas are JSON Schema draft 2020-12 for an object. They are
// checked when a tool is registered (a tool with an invalid schema cannot
// be registered: unknown keywords, bad types, bad regular expressions and
// dangling references are errors), compiled once and cached by
// github.com/openprogram/openprogram/internal/schema, the one JSON Schema
// validator of OpenProgram. [ValidateArgs] reports bad arguments as an
// [*ArgumentsError] with the path and keyword of the first failure by
// (path, keyword), which the MCP layer maps to JSON-RPC -32602.
//
// # Executing
//
// [Executor.Execute] validates arguments, bounds the call with a timeout
// (or the tool's [TimeoutHinter] hint), recovers panics, caps the result
// (head and tail kept around a "[... N bytes truncated ...]" marker) and
// delivers update strings in order and never after it returns.
//
// # Call information
//
// [WithCall] attaches a [CallInfo] to a context: the session and the
// authz.Speaker the gate checked, whole (authority, source, rules, working
// directories, state directory). Tools read it with [CallFrom]; a file tool
// asks the speaker's WriteTarget whether it may write a path.
// [StoredAuthority] is the speaker as the store records it.
//
// # Names
//
// [ValidName] is the one tool-name rule (1 to [MaxNameLen] bytes of
// [A-Za-z0-9_.-]): the registry refuses any other name, and the
// configuration refuses to expose one.
// runtime.Runtime.RunTool (through which the turn loop and MCP tool_call
// run tools) and the gate set it.
package tool
