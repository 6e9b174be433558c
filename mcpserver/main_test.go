package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// runAsServer, when set in the environment, makes the test binary serve MCP
// on its stdin and stdout with the test environment instead of running
// tests (the fork-and-exec trick of go-sdk's mcp/cmd_test.go). The value is
// the drain timeout (a time.Duration string). On exit it writes its audit
// records to stderr as JSON lines prefixed "AUDIT ".
const runAsServer = "OPENPROGRAM_MCPSERVER_TEST_SERVE"

// runAsServerTasks, set beside runAsServer, serves with task support
// (newTaskEnv: an in-memory task store, runners in the process).
const runAsServerTasks = "OPENPROGRAM_MCPSERVER_TEST_TASKS"

func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(runAsServer); ok {
		os.Exit(serveStdio(v))
	}
	goleak.VerifyTestMain(m)
}

func serveStdio(drain string) int {
	d, err := time.ParseDuration(drain)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bad %s: %v\n", runAsServer, err)
		return 2
	}
	var (
		e  *env
		te *taskEnv
	)
	if os.Getenv(runAsServerTasks) != "" {
		if te, err = newTaskEnvErr(nil, nil); err == nil {
			e = te.env
			e.srv.drain = d
		}
	} else {
		e, err = newEnv(func(o *envConfig) { o.DrainTimeout = d })
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	err = e.srv.Serve(context.Background(), os.Stdin, os.Stdout)
	if te != nil {
		te.runners.Wait()
	}
	for _, r := range e.store.allAudit() {
		line, _ := json.Marshal(map[string]any{"type": r.Type, "session_id": r.SessionID, "payload": r.Payload})
		fmt.Fprintf(os.Stderr, "AUDIT %s\n", line)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}
