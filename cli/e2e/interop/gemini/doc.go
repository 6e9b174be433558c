// Package gemini holds the end-to-end test in which Gemini CLI (pinned in
// interop/gemini/package-lock.json) gets our entry in settings.json from
// `openprogram mcp install --client gemini`, connects in `gemini mcp list`,
// and calls prompt_send in `gemini -p` against a fake of the Gemini API
// (cli/e2e/fakemodel), a 90 s turn. It has no API.
//
//	cd cli && GOWORK=off go test -race ./e2e/interop/gemini
package gemini
