package host_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider"
	"github.com/openprogram/openprogram/sessions"
)

// A program embeds the host: one typed configuration, one Open, then a turn
// as the owner (non-interactive, as `openprogram prompt` runs it). The
// scripted model answers without a network.
func Example() {
	dir, err := os.MkdirTemp("", "openprogram-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	state := filepath.Join(dir, "state")
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"turns":[{"text":"Hello from the host."}]}`), 0o600); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	h, err := host.Open(ctx, host.Config{
		StateDir: state,
		StoreURL: "sqlite:" + filepath.Join(state, "openprogram.db"),
		Model:    provider.Config{Provider: "scripted", Script: script},
		Agent:    host.AgentConfig{WorkDirs: []string{dir}},
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()

	owner, err := h.Owner(host.OwnerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	s, err := h.Store().CreateSession(ctx, sessions.Session{ID: "cli_00000000000000000000000000000001", AgentID: "main", Title: "Example", Source: authz.SourceCLI})
	if err != nil {
		log.Fatal(err)
	}
	res, err := h.Runtime().ProcessUserTurn(ctx, runtime.TurnRequest{SessionID: s.ID, Text: "hi", AgentID: "main", Request: owner.Request, RequestID: "example"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Text)
	fmt.Println(owner.Request.StateDir == state)
	// Output:
	// [scripted] Hello from the host.
	// true
}
