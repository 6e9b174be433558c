// Package e2etest is the harness every end-to-end test package of the cli
// module shares (cli/e2e, cli/e2e/interop/..., cli/e2e/tasks, cli/e2e/dist):
// Main builds cmd/openprogram for a package run (BinPath; linked once while
// the sources do not change, see sharedBuild), NewInstall gives a test a
// fresh state directory with a paired token on SQLite or PostgreSQL, Serve
// drives `openprogram mcp serve` with the go-sdk client over its real stdin
// and stdout and checks every frame the server writes against the official
// MCP 2025-11-25 schema (Validator, CheckFrames), and FrameTee records the
// frames of a client that starts the server itself. The fake vendor model
// servers the real clients talk to are in cli/e2e/fakemodel.
//
// It is internal to the end-to-end tests and has no stability promise.
package e2etest
