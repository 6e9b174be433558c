// Package e2e holds the end-to-end tests of the openprogram binary. It has
// no API: `go test` builds cmd/openprogram once (with -race when the tests
// run with -race), gives every test a fresh state directory, and drives
// `openprogram mcp serve` with the go-sdk MCP client over its real stdin and
// stdout, on SQLite and, when OPENPROGRAM_TEST_DATABASE_URL names a server,
// on PostgreSQL. Every frame the server writes is checked against the
// official MCP 2025-11-25 schema.
//
// Run them from the cli module:
//
//	cd cli && GOWORK=off go test -race ./e2e
//	OPENPROGRAM_TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' GOWORK=off go test -race ./e2e
package e2e
