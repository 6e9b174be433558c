// Package cli is the openprogram command line and the composition root of
// OpenProgram: it resolves the state directory, reads config.json and wires
// tokenauth, authz, sessions, runtime and mcpserver together.
//
//	code := cli.Main(ctx, &cli.App{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
//		Env: os.Environ(), Version: "v1.0.0"}, os.Args[1:])
//	os.Exit(code)
//
// # Commands
//
//   - openprogram mcp serve: authenticate (OPENPROGRAM_MCP_TOKEN against
//     <state>/mcp_server_token) before reading stdin, then serve the six MCP
//     tools over stdio until stdin ends.
//   - openprogram mcp token create: create the token once and print it.
//   - openprogram mcp client-config [--client NAME]: the snippet that adds the
//     server to Claude Desktop, Claude Code, Cursor, VS Code or Codex.
//   - openprogram config get|set|unset|list: validated, atomic edits of config.json.
//   - openprogram sessions list|show, tools list [--exposed], audit tail|verify,
//     doctor, version.
//
// # Exit codes
//
// 0 success, 1 failure, 2 usage. Errors are one line on stderr starting with
// "Error: " and say what to do. Nothing but command output reaches stdout;
// for mcp serve, nothing but JSON-RPC frames.
package cli
