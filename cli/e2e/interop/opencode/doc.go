// Package opencode holds the end-to-end test in which opencode (pinned in
// interop/opencode/package-lock.json) gets our entry merged into its
// opencode.json by `openprogram mcp install --client opencode`, connects in
// `opencode mcp list`, and calls prompt_send in `opencode run` against a
// fake of the OpenAI Chat Completions API (cli/e2e/fakemodel), a 90 s turn.
// It has no API.
//
//	cd cli && GOWORK=off go test -race ./e2e/interop/opencode
package opencode
