// Package claude holds the end-to-end test in which Claude Code (pinned in
// interop/claude-code/package-lock.json) is added with `openprogram mcp
// install --client claude-code`, connects in `claude mcp list`, and calls
// all six tools in `claude -p` against a fake of the Anthropic Messages API
// (cli/e2e/fakemodel), its first prompt_send a 90 s turn. It has no API.
//
//	cd cli && GOWORK=off go test -race ./e2e/interop/claude
package claude
