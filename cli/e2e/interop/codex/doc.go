// Package codex holds the end-to-end tests of the Codex CLI (pinned in
// interop/codex/package-lock.json): it reads back the config.toml that
// `openprogram mcp install --client codex` wrote (`codex mcp list --json`),
// and `codex exec` calls all six tools against a fake of the OpenAI
// Responses API (cli/e2e/fakemodel), its first prompt_send a 90 s turn. It
// has no API.
//
//	cd cli && GOWORK=off go test -race ./e2e/interop/codex
package codex
