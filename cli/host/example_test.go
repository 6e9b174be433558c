package host_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/openprogram/openprogram/cli/host"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/provider"
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
	line, err := h.Conversations().Open(owner, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer line.Close(conversation.ReasonConnectionClosed)
	turn := line.NewTurn("example", "", "hi") // a new session
	if err := line.Admit(ctx, turn); err != nil {
		log.Fatal(err)
	}
	reply, err := line.Send(ctx, turn, conversation.SendOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.Text)
	fmt.Println(owner.StateDir() == state)
	// Output:
	// [scripted] Hello from the host.
	// true
}
