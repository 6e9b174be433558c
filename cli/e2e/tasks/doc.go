// Package tasks holds the end-to-end tests of durable MCP tasks: the
// official TypeScript SDK's task client (interop/ts/tasks.mjs, the SDK
// pinned by interop/ts/package-lock.json) drives `openprogram mcp serve`,
// whose task-augmented prompt_send runs in a detached `mcp run-task`
// process, against a fake model on loopback (cli/e2e/fakemodel) that holds
// its answer for a 90 s turn. Each step is a new client and server process;
// every frame a server writes is checked against the official MCP schema.
//
//	cd cli && GOWORK=off go test -race ./e2e/tasks
package tasks
