package e2etest

import "testing"

// A task-augmented tools/call is answered with a CreateTaskResult, which
// CheckFrames takes, and with a CallToolResult, which it refuses; a plain
// tools/call still wants its CallToolResult.
func TestCheckFramesTaskAugmentedCall(t *testing.T) {
	const client = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"x"},"task":{"ttl":60000}}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"prompt_send","arguments":{"prompt":"y"}}}
`
	const created = `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1","status":"working","createdAt":"2026-12-01T00:00:00.000Z","lastUpdatedAt":"2026-12-01T00:00:00.000Z","ttl":60000,"pollInterval":1000}}}`
	const callResult = `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}`
	if n, err := CheckFrames(Validator, []byte(client), []byte(created+"\n"+callResult+"\n")); err != nil || n != 2 {
		t.Fatalf("a task created and a plain result: %d frames, %v; want 2 and no error", n, err)
	}
	for name, server := range map[string]string{
		"a CallToolResult to a task-augmented call": `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}` + "\n" + callResult,
		"a CreateTaskResult to a plain call":        created + "\n" + `{"jsonrpc":"2.0","id":2,"result":{"task":{"taskId":"t2","status":"working","createdAt":"2026-12-01T00:00:00.000Z","lastUpdatedAt":"2026-12-01T00:00:00.000Z","ttl":60000}}}`,
		"a task without its status":                 `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t1","createdAt":"2026-12-01T00:00:00.000Z","lastUpdatedAt":"2026-12-01T00:00:00.000Z","ttl":60000}}}` + "\n" + callResult,
	} {
		if _, err := CheckFrames(Validator, []byte(client), []byte(server+"\n")); err == nil {
			t.Errorf("%s: CheckFrames accepted it", name)
		}
	}
}
