// Package typescript holds the end-to-end test in which the official
// TypeScript SDK (@modelcontextprotocol/sdk, pinned in
// interop/ts/package-lock.json) runs interop/ts/interop.mjs, which asserts
// the contract through the SDK's Client and StdioClientTransport. The server
// is started through the frame tee (e2etest.FrameTee): every frame it wrote
// must validate against the official MCP schema, each result against the
// type of the request it answers. It has no API.
//
//	cd cli && GOWORK=off go test -race ./e2e/interop/typescript
package typescript
