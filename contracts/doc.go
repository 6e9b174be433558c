// Package contracts is the wire contract of the OpenProgram MCP server
// (`openprogram mcp serve`): the six tool names and input schemas, argument
// validation, the payload types and their JSON text form, the fixed error
// texts, and a typed client for MCP client projects.
//
// It depends only on the MCP Go SDK and the repository's internal helpers
// (its JSON Schema validator among them), so client projects can import it
// cheaply.
//
//	// Connect with go-sdk, routing progress to this package.
//	client := mcp.NewClient(&mcp.Implementation{Name: "my-client", Version: "v1"},
//		&mcp.ClientOptions{ProgressNotificationHandler: contracts.HandleProgress})
//	cmd := exec.Command("openprogram", "mcp", "serve") // OPENPROGRAM_MCP_TOKEN in its environment
//	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
//	if err != nil { ... }
//	defer cs.Close()
//
//	op := contracts.NewClient(cs)
//	res, err := op.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "Summarise my notes"},
//		contracts.WithProgress(func(p float64, msg string) { log.Println(p, msg) }))
//	var te *contracts.ToolError
//	if errors.As(err, &te) { ... te.Payload.Error == contracts.TextPromptExecutionFailed ... }
//
// # Tools
//
// [Names] lists the six tools in their fixed order: [SessionsList],
// [SessionGet], [PromptSend], [PromptCancel], [ToolsList], [ToolCall].
// [Tools] returns them as *mcp.Tool values (name, description, input
// schema) for mcp.Server.AddTool. The schemas are generated from the
// argument structs ([SessionGetArgs], [PromptSendArgs], ...) with
// github.com/invopop/jsonschema at build time (go generate), stored as
// canonical JSON, compiled for validation on the first call that needs
// them, and pinned byte for byte by a golden test. Every schema is a closed object
// ("additionalProperties": false); a required string is non-blank
// ("minLength": 1, "pattern": "\\S").
//
// # Validation
//
// [Validate] checks tools/call arguments and returns them typed, as the
// tool's own arguments value ([Args]: a [PromptSendArgs] for prompt_send,
// ...), decoded once; or the *jsonrpc.Error the server must answer with:
// -32601 for an unknown tool, -32602 "invalid arguments at <path>:
// <keyword>" for arguments that fail, naming the property concerned
// ("$.session_id: required"). Package
// [github.com/openprogram/openprogram/internal/schema] is the validator
// behind it, also used for runtime tool arguments. [CheckPrompt] applies
// prompt_send's prompt rule to a prompt that does not arrive as JSON (the
// owner's console): [ErrBlankPrompt], [ErrNULPrompt].
//
// # Payloads
//
// Every successful result is one TextContent holding compact JSON with sorted
// keys ([EncodePayload], [TextResult]); wrapper-tool failures are isError
// results holding an [ErrorPayload] ([ErrorResult]). The Text* constants are
// the contract's fixed texts.
//
// # Client
//
// [Client] wraps a connected *mcp.ClientSession with one method per tool and
// turns isError results into *[ToolError] and JSON-RPC errors into
// *[ProtocolError].
//
// # Protocol
//
// [ProtocolVersion] is the baseline (2025-11-25); a server passes
// [SupportedProtocolVersions] to mcp.ServerOptions so go-sdk negotiates only
// the four versions of the contract.
package contracts
