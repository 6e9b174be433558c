package contracts_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/contracts"
)

// A client project talks to `openprogram mcp serve` through the typed
// client. Here an in-process server with canned answers stands in for the
// real one; a client project would connect with
//
//	cmd := exec.Command("openprogram", "mcp", "serve")
//	cmd.Env = append(os.Environ(), "OPENPROGRAM_MCP_TOKEN="+token)
//	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
func ExampleClient() {
	ctx := context.Background()
	serverTransport, clientTransport := mcp.NewInMemoryTransports()
	ss, err := newCannedServer(nil).Connect(ctx, serverTransport, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Wait()

	// Route notifications/progress to contracts.WithProgress callbacks.
	client := mcp.NewClient(&mcp.Implementation{Name: "example-client", Version: "v1.0.0"},
		&mcp.ClientOptions{ProgressNotificationHandler: contracts.HandleProgress})
	cs, err := client.Connect(ctx, clientTransport, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	fmt.Println("protocol:", cs.InitializeResult().ProtocolVersion)

	op := contracts.NewClient(cs)
	sessions, err := op.SessionsList(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range sessions {
		fmt.Printf("session %s %q updated at %d\n", s.ID, s.Title, s.UpdatedAt)
	}

	res, err := op.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "Say hello", SessionID: sessions[0].ID},
		contracts.WithProgress(func(progress float64, message string) {
			fmt.Printf("progress %g: %s\n", progress, message)
		}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reply %q (failed: %t)\n", res.Text, res.Failed)

	// An isError result is a *contracts.ToolError ...
	_, err = op.SessionGet(ctx, "mcp_missing")
	var toolErr *contracts.ToolError
	if errors.As(err, &toolErr) && toolErr.Payload != nil {
		fmt.Println("tool error:", toolErr.Payload.Error)
	}
	// ... and a JSON-RPC error a *contracts.ProtocolError with its code.
	_, err = op.PromptSend(ctx, contracts.PromptSendArgs{Prompt: "hi", SessionID: "mcp_unknown"})
	var protoErr *contracts.ProtocolError
	if errors.As(err, &protoErr) {
		fmt.Println("protocol error:", protoErr.Code, protoErr.Message)
	}

	// Output:
	// protocol: 2025-11-25
	// session mcp_0123456789abcdef0123456789abcdef "Greeting" updated at 1700000000
	// progress 1: turn started
	// progress 2: tool memory_search finished
	// progress 3: turn finished
	// reply "Hello! You said: Say hello" (failed: false)
	// tool error: session not found
	// protocol error: -32602 invalid MCP prompt session
}

// Validate is what a server calls before it runs a tool.
func ExampleValidate() {
	args, err := contracts.Validate(contracts.ToolCall, []byte(`{"name":"memory_search"}`))
	fmt.Println(args, err)

	_, err = contracts.Validate(contracts.SessionGet, []byte(`{"session_id":"  "}`))
	fmt.Println(err)

	_, err = contracts.Validate("session_delete", nil)
	fmt.Println(err)

	// Output:
	// {memory_search map[]} <nil>
	// invalid arguments at $.session_id: pattern
	// unknown tool "session_delete"
}

func ExampleEncodePayload() {
	text, err := contracts.EncodePayload(contracts.PromptSendResult{
		SessionID: "mcp_0123456789abcdef0123456789abcdef", Text: "Grüße <3", AssistantMsgID: "m2",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
	// Output:
	// {"assistant_msg_id":"m2","failed":false,"session_id":"mcp_0123456789abcdef0123456789abcdef","text":"Grüße <3"}
}
