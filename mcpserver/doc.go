// Package mcpserver is the OpenProgram MCP service: the six fixed tools of
// docs/contract.md (sessions_list, session_get, prompt_send, prompt_cancel,
// tools_list, tool_call) served over stdio with
// github.com/modelcontextprotocol/go-sdk.
//
// The CLI authenticates the client first (tokenauth), builds the runtime,
// and hands everything to [New]; [Server.Serve] then speaks MCP on stdin and
// stdout until stdin ends:
//
//	authority, err := authz.MCPClientAuthority(clientID, ownerPrincipal)
//	if err != nil {
//		return err
//	}
//	srv, err := mcpserver.New(mcpserver.Options{
//		Store:        store,           // sessions.Store
//		Runtime:      rt,              // *runtime.Runtime (with a Bus and Questions)
//		ClientID:     clientID,        // tokenauth.Authenticate
//		Authority:    authority,
//		ExposedTools: cfg.ExposedTools, // mcp_server.exposed_tools
//		Rules:        cfg.Rules,        // tools.permission_rules
//		WorkDirs:     []string{cwd},
//		Version:      version,
//		Logger:       slog.New(slog.NewTextHandler(os.Stderr, nil)),
//	})
//	if err != nil {
//		return err
//	}
//	return srv.Serve(ctx, os.Stdin, os.Stdout) // nil after stdin EOF
//
// # Authority
//
// Every request runs with one authority, fixed by New: source "mcp",
// permission mode "ask", and the paired, non-interactive MCP client
// authority of the authenticated client id. Nothing a client sends
// (clientInfo, _meta, arguments) changes it; clientInfo is only logged.
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
// unknown tools -32601.
//
// # Requests, cancellation and questions
//
// A prompt_send is recorded per connection by its JSON-RPC id and session.
// notifications/cancelled, prompt_cancel (same connection only) and stdin
// EOF cancel its turn; the cleanup (turn context cancelled, the session's
// questions declined, record removed, audit record written) runs once.
// While a prompt_send runs, every question the runtime raises on its
// session is declined at once; questions of other sessions are untouched.
//
// # Progress and audit
//
// With a _meta.progressToken, tool_call sends each runtime tool update and
// prompt_send sends turn events (turn started, tool started/finished, text
// progress coalesced, turn finished) as notifications/progress numbered
// 1, 2, 3, ..., all before the response. Audit records (see the Audit
// constants) never hold prompt text, message content, tool arguments or
// the token.
package mcpserver
