package typescript

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openprogram/openprogram/cli/e2e/internal/e2etest"
	"github.com/openprogram/openprogram/cli/e2e/internal/interoptest"
)

// interop.mjs passes through the SDK, and what it did shows in the audit
// log, intact and token-free.
func TestTypeScriptSDK(t *testing.T) {
	dir := interoptest.Project(t, "ts")
	in := interoptest.Setup(t)
	interoptest.ScriptTS(t, in)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "interop.mjs"), e2etest.FrameTee(t), in.Home)
	cmd.Dir = dir
	cmd.Env = append(interoptest.BaseEnv(in.UserHome), "OPENPROGRAM_MCP_TOKEN="+in.Token)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("node interop.mjs took %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("the TypeScript SDK interop script failed (%v):\n%s", err, out.String())
	}
	if testing.Verbose() {
		t.Logf("transcript:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "\nPASS: ") {
		t.Fatalf("the script exited 0 without its PASS line:\n%s", out.String())
	}
	if strings.Contains(out.String(), in.Token) {
		t.Errorf("the transcript contains the token")
	}

	// What the TypeScript client did must show in the audit log, which must stay intact
	// and token-free.
	verify := in.MustRun("audit", "verify")
	if !strings.HasPrefix(verify, "audit log intact:") {
		t.Errorf("openprogram audit verify = %q, want \"audit log intact: ...\"", verify)
	}
	tail := in.MustRun("audit", "tail", "-n", "200", "--json")
	if strings.Contains(tail, in.Token) {
		t.Errorf("the audit log contains the token")
	}
	var got struct {
		types   map[string]int
		reasons []string
	}
	got.types = map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(tail), "\n") {
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				Reason   string `json:"reason"`
				ClientID string `json:"client_id"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit tail line %q: %v", line, err)
		}
		got.types[rec.Type]++
		if rec.Type == "mcp.request.cancelled" {
			got.reasons = append(got.reasons, rec.Payload.Reason)
			if rec.Payload.ClientID != in.ClientID {
				t.Errorf("mcp.request.cancelled client_id = %q, want %q", rec.Payload.ClientID, in.ClientID)
			}
		}
	}
	// The AbortSignal cancels first (notifications/cancelled), then prompt_cancel.
	if diff := cmp.Diff([]string{"request_cancelled", "prompt_cancel"}, got.reasons); diff != "" {
		t.Errorf("mcp.request.cancelled reasons (-want +got):\n%s", diff)
	}
	for _, typ := range []string{"mcp.server.start", "mcp.server.stop", "mcp.prompt.completed", "mcp.tool.denied"} {
		if got.types[typ] == 0 {
			t.Errorf("the audit log has no %s record; types: %v", typ, got.types)
		}
	}
}
