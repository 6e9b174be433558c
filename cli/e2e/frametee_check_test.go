//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
)

// TestCheckFrames proves the check the interop tests run on the frame tee's logs
// can fail: one valid exchange passes, and each broken server frame is rejected.
func TestCheckFrames(t *testing.T) {
	const client = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tools_list","arguments":{}}}
`
	const initResult = `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"openprogram","version":"1"}}}`
	const listResult = `{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"tools_list","inputSchema":{"type":"object"}}]}}`
	const callResult = `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"[]"}]}}`
	valid := []string{initResult, listResult, callResult}

	if n, err := e2etest.CheckFrames(e2etest.Validator, []byte(client), []byte(strings.Join(valid, "\n")+"\n")); err != nil || n != 3 {
		t.Fatalf("a valid exchange: %d frames, %v; want 3 and no error", n, err)
	}
	// Each case replaces one valid frame (replace is its index) or, with -1, adds one.
	for name, c := range map[string]struct {
		replace int
		frame   string
	}{
		"a tools/list result without tools":       {1, `{"jsonrpc":"2.0","id":2,"result":{}}`},
		"a content block without its type":        {2, `{"jsonrpc":"2.0","id":3,"result":{"content":[{"text":"[]"}]}}`},
		"an initialize result without serverInfo": {0, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}`},
		"a null id":                      {-1, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`},
		"not JSON":                       {-1, `{"jsonrpc":"2.0","id":2,"result":`},
		"no jsonrpc version":             {1, `{"id":2,"result":{"tools":[]}}`},
		"a result to no request":         {-1, `{"jsonrpc":"2.0","id":9,"result":{}}`},
		"a second result to one request": {-1, initResult},
		"a bad progress notification":    {-1, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":"one"}}`},
	} {
		t.Run(name, func(t *testing.T) {
			frames := append([]string{}, valid...)
			if c.replace >= 0 {
				frames[c.replace] = c.frame
			} else {
				frames = append(frames, c.frame)
			}
			if _, err := e2etest.CheckFrames(e2etest.Validator, []byte(client), []byte(strings.Join(frames, "\n"))); err == nil {
				t.Errorf("CheckFrames accepted %s", c.frame)
			}
		})
	}
}

// TestCheckFrameLogsNeedsAProcess: a tee that was never started is a failure, not a pass.
func TestCheckFrameLogsNeedsAProcess(t *testing.T) {
	dir := t.TempDir()
	if _, err := e2etest.CheckFrameLogs(e2etest.Validator, dir); err == nil {
		t.Fatal("CheckFrameLogs of an empty log directory succeeded")
	}
	if err := os.WriteFile(filepath.Join(dir, "1.client"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "1.server"), []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := e2etest.CheckFrameLogs(e2etest.Validator, dir); err == nil {
		t.Fatal("CheckFrameLogs accepted a result to no request")
	}
}
