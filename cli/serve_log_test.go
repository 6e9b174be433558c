package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeLogFlags: --log-format json writes JSON records, --log-level
// drops what is below it, and --log-file also appends to a 0600 file in the
// state directory (OPENPROGRAM_LOG_LEVEL works like the flag).
func TestServeLogFlags(t *testing.T) {
	env, state := fresh(t)
	token := strings.TrimSpace(mustCLI(t, env, "mcp", "token", "create"))
	env = append(env, "OPENPROGRAM_MCP_TOKEN="+token)

	r := runCLI(t, env, "mcp", "serve", "--log-format", "json", "--log-file")
	if r.code != 0 {
		t.Fatalf("mcp serve = exit %d stderr %s", r.code, r.stderr)
	}
	var ready bool
	for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("--log-format json wrote a line that is not JSON: %q", line)
		}
		ready = ready || rec["msg"] == "mcp serve ready"
	}
	if !ready {
		t.Errorf("no \"mcp serve ready\" record at the default level:\n%s", r.stderr)
	}
	logFile := filepath.Join(state, "mcp-serve.log")
	data, err := os.ReadFile(logFile)
	if err != nil || !strings.Contains(string(data), "mcp serve ready") {
		t.Errorf("log file %s = %q, %v; want the records", logFile, data, err)
	}
	checkPrivate(t, logFile)
	if strings.Contains(r.stderr+string(data), token) {
		t.Errorf("the log holds the token")
	}

	for _, e := range []struct {
		args []string
		env  []string
	}{{[]string{"--log-level", "error"}, nil}, {nil, []string{"OPENPROGRAM_LOG_LEVEL=error"}}} {
		r = runCLI(t, append(env, e.env...), append([]string{"mcp", "serve"}, e.args...)...)
		if r.code != 0 || strings.Contains(r.stderr, "mcp serve ready") || strings.Contains(r.stderr, "level=WARN") {
			t.Errorf("mcp serve at level error (%v %v) = exit %d stderr %q, want no info or warn records", e.args, e.env, r.code, r.stderr)
		}
	}
}
