// Package cli is the openprogram command line: the kong command tree, one
// small file per command, each parsing its flags, calling the package that
// does the work and printing. The composition root itself is cli/host.
//
//	code := cli.Main(ctx, &cli.App{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
//		Env: os.Environ(), Version: "v1.0.0"}, os.Args[1:])
//	os.Exit(code)
//
// # Layout
//
//   - cli/host: the composition root: the store, the tool registry, the
//     model provider, the turn loop and the conversation service, built
//     once; the speakers.
//   - cli/internal/settings: the state directory, and config.json, the
//     environment and the defaults loaded once into one typed Config (the
//     key table, what config get, set, unset and list do).
//   - cli/internal/console: the owner's console (chat, prompt) and the one
//     sanitiser of terminal output.
//   - cli/internal/clients: the MCP clients the server installs itself
//     into (client-config, install, uninstall, what doctor reads back).
//   - cli/internal/doctor: the checks of doctor.
//   - cli/internal/grammar: what the command line knows about its kong
//     model (negative numbers as values, when to show usage) and the man
//     page and completion scripts generated from it.
//   - cli/internal/shell: quoting for a POSIX shell. (Files created
//     owner-only: the repository's internal/privatefile.)
//
// No package below cli imports it.
//
// # Commands
//
//   - openprogram mcp serve: authenticate (OPENPROGRAM_MCP_TOKEN against
//     <state>/mcp_server_token) before reading stdin, then serve the six MCP
//     tools over stdio until stdin ends.
//   - openprogram mcp token create: create the token once and print it.
//   - openprogram mcp client-config|install|uninstall --client NAME: the
//     entry that adds the server to Claude Desktop, Claude Code, Cursor, VS
//     Code, Codex, opencode or Gemini CLI, printed or merged into its file.
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
