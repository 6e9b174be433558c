// Package interop holds the end-to-end tests in which MCP clients none of us
// wrote drive the openprogram binary: the TypeScript SDK, the Inspector,
// Codex, Claude Code, opencode and Gemini CLI, each installed from its pinned
// lock file under the repository's interop/ directory (see interop/README.md).
// It has no API.
//
//	cd cli && GOWORK=off go test -race ./e2e/interop
package interop
