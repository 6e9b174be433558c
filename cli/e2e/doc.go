// Package e2e holds the end-to-end tests of the openprogram binary's
// protocol, authentication, tools, turns, wire and console behaviour. It has
// no API: `go test` builds cmd/openprogram once (with -race when the tests
// run with -race), gives every test a fresh state directory, and drives
// `openprogram mcp serve` with the go-sdk MCP client over its real stdin and
// stdout, on SQLite and, when OPENPROGRAM_TEST_DATABASE_URL names a server,
// on PostgreSQL. Every frame the server writes is checked against the
// official MCP 2025-11-25 schema.
//
// The end-to-end tests are split by concern so each package stays short
// under -race on a small machine; all share the harness in internal/e2etest:
//
//   - e2e (this package): protocol, auth, tools, turns, wire, console.
//   - e2e/interop/<client>: one package per real MCP client (typescript: the
//     TypeScript SDK, inspector, codex, claude, opencode, gemini), installed
//     from interop/, sharing internal/interoptest; each client's long turn is
//     its own package's time.
//   - e2e/tasks: durable MCP tasks through the TypeScript SDK's task client.
//   - e2e/dist: the release archive, the MCP bundle and the install snippet,
//     on a binary built as the release builds it.
//
// Run them from the cli module:
//
//	cd cli && GOWORK=off go test -race ./e2e/...
//	OPENPROGRAM_TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' GOWORK=off go test -race ./e2e/...
package e2e
