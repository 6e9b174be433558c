// Package dist holds the end-to-end tests of the release files: the archive,
// the MCP bundle, server.json and the README's install snippet, built by the
// steps of make dist (packaging/dist.sh) from a binary built as the release
// builds it (static, -trimpath, -ldflags "-s -w", no -race). It has no API.
//
//	cd cli && GOWORK=off go test ./e2e/dist
package dist
