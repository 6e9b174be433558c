// Package mcpserver is the OpenProgram MCP service: the six fixed tools of
// docs/contract.md (sessions_list, session_get, prompt_send, prompt_cancel,
// tools_list, tool_call) served over stdio with
// github.com/modelcontextprotocol/go-sdk.
//
// The CLI authenticates the client first (tokenauth), builds the runtime and
// the conversation service over it (runtime/conversation), makes the
// client's speaker, and hands them to [New]; [Server.Serve] then speaks MCP
// on stdin and stdout until stdin ends. The server is an adapter: every
// prompt_send and tool_call goes through the client's conversation.Line.
//
//	client, err := authz.NewMCPClient(clientID, ownerPrincipal, // clientID: tokenauth.Authenticate
//		authz.Scope{Rules: rules, WorkDirs: []string{cwd}, StateDir: stateDir})
//	if err != nil {
//		return err
//	}
//	srv, err := mcpserver.New(mcpserver.Options{
//		Conversations: conv,             // *conversation.Service
//		Speaker:       client,
//		ExposedTools:  cfg.ExposedTools, // mcp_server.exposed_tools
//		Version:       version,
//		Logger:        slog.New(slog.NewTextHandler(os.Stderr, nil)),
//	})
//	if err != nil {
//		return err
//	}
//	return srv.Serve(ctx, os.Stdin, os.Stdout) // nil after stdin EOF
//
// # Authority
//
// Every request runs with one speaker, fixed by New: [Options.Speaker], an
// MCP client's made by authz.NewMCPClient (source "mcp", permission mode
// "ask", the paired, non-interactive authority of the authenticated client
// id, the permission rules, working directories and state directory); New
// refuses any other. Nothing a client sends (clientInfo, _meta, arguments)
// changes it; clientInfo is only logged.
//
// # Wire behaviour
//
// Serve runs go-sdk over a newline-delimited connection of its own
// (internal/stdio) that answers what go-sdk v1.8.0's stdio transport gets
// wrong: a line that is not JSON is -32700 and a batch or other non-JSON-RPC
// JSON is -32600, with the session going on; requests other than
// initialize and ping before initialization, and every method the server
// does not serve (server/discover, resources, prompts, logging, ...), are
// refused; a request the client cancels is answered
// {"code":0,"message":"Request cancelled"} and never with a result;
// responses still due at stdin EOF are written for up to
// [Options.DrainTimeout], after which what still runs is cancelled
// (reason connection_closed) and nothing more is written. Handler panics
// are recovered into an isError result.
//
// tools/list returns the six tools in contract order with their frozen
// schemas; tools/call arguments are validated with contracts.Validate
// before any handler runs, so schema failures are JSON-RPC -32602 and
// unknown tools -32601, and the handlers read the typed arguments it
// returns (contracts.Args), never the raw ones.
//
// # Requests, cancellation and questions
//
// A prompt_send is a turn on the connection's line (conversation.Line),
// known there by its JSON-RPC id and its session. notifications/cancelled,
// prompt_cancel (same connection only) and stdin EOF cancel it at the
// turn's commit point, so a cancel and the final write never both win; the
// cleanup (the turn stopped, the session's questions declined, the turn
// removed, the mcp.request.cancelled record written) runs once. A question
// the turn raises is declined at once: nobody can answer an MCP client's.
//
// # Progress and audit
//
// With a _meta.progressToken, tool_call sends each runtime tool update and
// prompt_send sends its turn's events (turn started, tool started/finished,
// text progress coalesced, turn finished), which it follows through the
// turn's own observer (conversation.SendOptions.Observe), as
// notifications/progress numbered 1, 2, 3, ..., all before the response. A
// client slow to read never slows the turn: turn events that do not fit a
// buffer of 256 are dropped.
//
// prompt_send and tool_call write their request record through the line
// before anything runs (mcp.prompt.requested, mcp.tool.requested), and a
// refused append refuses the request (conversation.AuditRefuse); the
// records of a turn and a call, their payloads and the cancel reasons are
// runtime/conversation's. This package writes the server's own records
// (the Audit constants: start, stop, and with [Options.Tasks] the tasks').
// No record holds prompt text, message content, tool arguments or the
// token.
package mcpserver
