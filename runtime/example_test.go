package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/provider/scripted"
	"github.com/openprogram/openprogram/sessions"
	"github.com/openprogram/openprogram/sessions/sqlite"
)

func ExampleRuntime_ProcessUserTurn() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "openprogram-example")
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, "sqlite:"+filepath.Join(dir, "openprogram.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	if _, err := store.CreateSession(ctx, sessions.Session{ID: "demo", AgentID: "main", Source: "mcp"}); err != nil {
		fmt.Println(err)
		return
	}

	script, _ := scripted.Parse([]byte(`{"turns":[{"text":"Hello from the script."}]}`))
	rt := runtime.New(runtime.Options{Store: store, Provider: scripted.New(script)})
	client, _ := authz.NewMCPClient("0123456789abcdef", "owner/install/fedcba9876543210", authz.Scope{})
	res, err := rt.ProcessUserTurn(ctx, runtime.TurnRequest{
		SessionID: "demo", Text: "Hi!", AgentID: "main", Speaker: client,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Text, res.Failed)
	// Output: [scripted] Hello from the script. false
}
