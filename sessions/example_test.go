package sessions_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openprogram/openprogram/sessions"
	_ "github.com/openprogram/openprogram/sessions/sqlite" // registers "sqlite:"
)

// Open an embedded SQLite store, create a session, append a user message
// and the reply as one chain (moving the head), then list the sessions and
// read the active branch.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sessions-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	store, err := sessions.Open(ctx, "sqlite:"+filepath.Join(dir, "openprogram.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	if _, err := store.CreateSession(ctx, sessions.Session{ID: "s1", AgentID: "main", Title: "First steps", Source: "cli"}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := store.AppendMessages(ctx, "s1", "", []sessions.NewMessage{
		{Role: sessions.RoleUser, Content: "Hello?"},
		{Role: sessions.RoleAssistant, Content: "Hello! How can I help?"},
	}, true); err != nil {
		fmt.Println(err)
		return
	}

	list, err := store.ListSessions(ctx, 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range list {
		fmt.Printf("session %s %q\n", s.ID, s.Title)
	}
	branch, err := store.Branch(ctx, "s1")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range branch {
		fmt.Printf("%s: %s\n", m.Role, m.Content)
	}
	// Output:
	// session s1 "First steps"
	// user: Hello?
	// assistant: Hello! How can I help?
}
