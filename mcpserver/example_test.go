package mcpserver_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/mcpserver"
	"github.com/openprogram/openprogram/runtime"
	"github.com/openprogram/openprogram/runtime/conversation"
	"github.com/openprogram/openprogram/runtime/questions"
	"github.com/openprogram/openprogram/runtime/tool"
	"github.com/openprogram/openprogram/sessions"
)

// This is the wiring of `openprogram mcp serve` once the client is
// authenticated: clientID comes from tokenauth.Authenticate and the owner
// principal from authz.LoadOrCreateOwnerPrincipal; cli/host does all of it
// in one place. (Not run: it needs a store backend and a configured model.)
func Example() {
	ctx := context.Background()
	clientID, principal := "0123456789abcdef", "owner/install/fedcba9876543210"
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)) // stdout is for JSON-RPC only

	store, err := sessions.Open(ctx, os.Getenv("OPENPROGRAM_DATABASE_URL"))
	if err != nil {
		logger.Error("open store", "error", err)
		return
	}
	defer store.Close()
	qs := questions.New(nil)
	registry := tool.NewRegistry() // builtin.Register(registry, deps) in the CLI
	executor := tool.NewExecutor(&tool.ExecutorOptions{Logger: logger})
	rt := runtime.New(runtime.Options{Store: store, Registry: registry, Executor: executor, Questions: qs,
		Standing: conversation.StandingApprovals(store, logger), Logger: logger})
	conv, err := conversation.New(conversation.Options{Store: store, Runtime: rt, Questions: qs, Logger: logger})
	if err != nil {
		logger.Error("conversation service", "error", err)
		return
	}

	client, err := authz.NewMCPClient(clientID, principal, authz.Scope{})
	if err != nil {
		logger.Error("client speaker", "error", err)
		return
	}
	srv, err := mcpserver.New(mcpserver.Options{
		Conversations: conv, Speaker: client,
		ExposedTools: []string{"memory_search", "memory_get"},
		Version:      "v1.0.0",
		Logger:       logger,
	})
	if err != nil {
		logger.Error("mcp server", "error", err)
		return
	}
	if err := srv.Serve(ctx, os.Stdin, os.Stdout); err != nil {
		logger.Error("mcp serve", "error", err)
	}
}
