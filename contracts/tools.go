package contracts

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openprogram/openprogram/internal/schema"
)

// The six tool names, in the order tools/list returns them.
const (
	SessionsList = "sessions_list"
	SessionGet   = "session_get"
	PromptSend   = "prompt_send"
	PromptCancel = "prompt_cancel"
	ToolsList    = "tools_list"
	ToolCall     = "tool_call"
)

// Names returns the six tool names in their fixed order. The slice is fresh
// on every call.
func Names() []string {
	return []string{SessionsList, SessionGet, PromptSend, PromptCancel, ToolsList, ToolCall}
}

// ProtocolVersion is the MCP protocol baseline the server negotiates first.
const ProtocolVersion = "2025-11-25"

// SupportedProtocolVersions returns, newest first, the only protocol versions
// the server negotiates (pass it to mcp.ServerOptions.SupportedProtocolVersions
// so go-sdk never offers 2026-07-28 nor answers server/discover with it). The
// slice is fresh on every call.
func SupportedProtocolVersions() []string {
	return []string{ProtocolVersion, "2025-06-18", "2025-03-26", "2024-11-05"}
}

// SessionsListArgs are the arguments of sessions_list: none.
type SessionsListArgs struct{}

// SessionGetArgs are the arguments of session_get.
type SessionGetArgs struct {
	// SessionID names the session to read. Required, non-blank.
	SessionID string `json:"session_id" jsonschema:"minLength=1,pattern=\\S"`
}

// PromptSendArgs are the arguments of prompt_send.
type PromptSendArgs struct {
	// Prompt is the user text of the turn. Required, non-blank.
	Prompt string `json:"prompt" jsonschema:"minLength=1,pattern=\\S"`
	// SessionID continues an existing session; empty starts a new one.
	SessionID string `json:"session_id,omitempty" jsonschema:"minLength=1,pattern=\\S"`
}

// PromptCancelArgs are the arguments of prompt_cancel.
type PromptCancelArgs struct {
	// SessionID names the session whose running turn to cancel. Required,
	// non-blank.
	SessionID string `json:"session_id" jsonschema:"minLength=1,pattern=\\S"`
}

// ToolsListArgs are the arguments of tools_list: none.
type ToolsListArgs struct{}

// ToolCallArgs are the arguments of tool_call.
type ToolCallArgs struct {
	// Name is the runtime tool to run, as listed by tools_list. Required,
	// non-blank.
	Name string `json:"name" jsonschema:"minLength=1,pattern=\\S"`
	// Arguments are the runtime tool's own arguments; missing or null means {}.
	Arguments map[string]any `json:"arguments,omitempty"`
}

// hints are a tool's MCP behaviour hints (docs/contract.md section 4). All four are
// always sent: the spec's defaults for destructiveHint and openWorldHint are
// true, which would be wrong for every one of the six tools but prompt_send.
type hints struct {
	readOnly, destructive, idempotent, openWorld bool
}

var (
	readOnly = hints{readOnly: true, idempotent: true}
	// prompt_send calls a model: it reaches outside the install.
	promptHints = hints{openWorld: true}
	// prompt_cancel repeated changes nothing more.
	cancelHints = hints{idempotent: true}
	// tool_call runs whichever exposed runtime tool is named; the gate
	// decides what it may do, so no hint is promised.
	callHints = hints{}
)

// spec is what each tool is made of, in tools/list order. args is the
// argument struct its input schema is generated from (schemas_gen.go).
var specs = []struct {
	name        string
	title       string
	hints       hints
	args        any
	description string
}{
	{SessionsList, "List sessions", readOnly, SessionsListArgs{}, "List the OpenProgram agent's conversation sessions, most recently updated first " +
		"(at most 100; archived sessions are hidden). Use it to find the session_id of an earlier conversation " +
		"before reading it with session_get or continuing it with prompt_send. Returns a JSON array of " +
		"{id, title, updated_at}, updated_at in Unix seconds."},
	{SessionGet, "Read a session", readOnly, SessionGetArgs{}, "Read one OpenProgram session: the messages of its active branch, oldest first, " +
		"as a JSON array of {id, role, content, timestamp} (role is user, assistant, tool or system; timestamp " +
		"in Unix seconds). Use it to review a conversation before continuing it with prompt_send. session_id " +
		"comes from sessions_list or an earlier prompt_send. Long sessions are cut: a content over 256 KiB keeps " +
		"its head and tail around \"[... N bytes truncated ...]\", and past 4 MiB in all only the newest " +
		"messages are returned, the first starting with \"[... N earlier messages omitted ...]\"."},
	{PromptSend, "Send a prompt", promptHints, PromptSendArgs{}, "Send a prompt to the OpenProgram agent and wait for its reply. Without " +
		"session_id a new session is started; with session_id the existing session is continued (it is never " +
		"created). The agent acts with paired-client authority: it can read memory and append notes, but it " +
		"cannot run commands, write files or wait for approvals. Returns {session_id, text, assistant_msg_id, " +
		"failed}; failed=true means the turn or the model failed. A session runs one turn at a time: while it is " +
		"busy the call fails with \"prompt execution failed\", so retry later or start a new session. Send a " +
		"progressToken to receive progress while the turn runs; use prompt_cancel to stop it."},
	{PromptCancel, "Cancel a prompt", cancelHints, PromptCancelArgs{}, "Cancel the running turn that prompt_send started for session_id on this " +
		"connection. Returns {session_id, cancelled}: cancelled=false means there was no such turn of yours " +
		"(unknown session, finished turn or another client's turn) and nothing changed."},
	{ToolsList, "List runtime tools", readOnly, ToolsListArgs{}, "List the OpenProgram runtime tools exposed for direct use with tool_call, as a " +
		"JSON array of {name, description, inputSchema}. Call it before tool_call to learn the tool names and " +
		"their argument schemas; an empty array means the operator exposed no tools."},
	{ToolCall, "Call a runtime tool", callHints, ToolCallArgs{}, "Run one exposed OpenProgram runtime tool directly, without the agent: name is a " +
		"tool listed by tools_list and arguments is an object matching that tool's inputSchema (default {}). " +
		"Returns the tool's own content (text or images). Every call passes the permission gate: a refused call " +
		"returns an error result starting with \"[denied]\" and the tool does not run."},
}

// taskSupport is the execution.taskSupport of each tool that may run as a
// task; the others answer at once ("forbidden", sent as no member).
var taskSupport = map[string]string{PromptSend: TaskSupportOptional}

// frozenTool is one tool as built on first use; nothing changes it
// afterwards. Its schema is compiled on the first validation against it.
type frozenTool struct {
	name        string
	title       string
	hints       hints
	description string
	schema      json.RawMessage                // the published schema, canonical JSON
	compiled    func() (*schema.Schema, error) // validates arguments, names the first failure
}

// The six tools are built on first use, not at init, from the schemas
// generated at build time (schemas_gen.go, held to the argument structs by
// TestGeneratedSchemas): importing the package (a client project, or the
// server before it answers initialize) costs no reflection, links no schema
// generator, and compiles a schema only for the first validation against it.
//
//go:generate go test -run ^TestGeneratedSchemas$ -update-generated
var (
	frozenOnce = sync.OnceValues(func() ([]*frozenTool, map[string]*frozenTool) {
		tools := mustFreeze()
		m := make(map[string]*frozenTool, len(tools))
		for _, t := range tools {
			m[t.name] = t
		}
		return tools, m
	})
)

// frozen returns the six tools in their fixed order.
func frozen() []*frozenTool {
	tools, _ := frozenOnce()
	return tools
}

// lookup returns the named tool and whether it is one of the six.
func lookup(name string) (*frozenTool, bool) {
	_, m := frozenOnce()
	t, ok := m[name]
	return t, ok
}

func mustFreeze() []*frozenTool {
	out := make([]*frozenTool, 0, len(specs))
	for _, s := range specs {
		t, err := freeze(s.name, s.description)
		if err != nil {
			panic(fmt.Sprintf("contracts: %v", err))
		}
		t.title, t.hints = s.title, s.hints
		out = append(out, t)
	}
	return out
}

func freeze(name, description string) (*frozenTool, error) {
	doc, ok := generatedSchemas[name]
	if !ok {
		return nil, fmt.Errorf("no generated schema for %s: run go generate in contracts", name)
	}
	compiled := sync.OnceValues(func() (*schema.Schema, error) {
		c, err := schema.Compile([]byte(doc))
		if err != nil {
			return nil, fmt.Errorf("compile schema of %s: %w", name, err)
		}
		return c, nil
	})
	return &frozenTool{name: name, description: description, schema: json.RawMessage(doc), compiled: compiled}, nil
}

// Tools returns the six tools in their fixed order, ready for
// mcp.Server.AddTool: name, title, description, input schema and the
// standard annotations (readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint, all four always present, and the title again for clients
// of protocol 2025-03-26, which read it only there). Each call returns deep
// copies: the InputSchema of each tool is a json.RawMessage of the frozen
// schema that the caller may keep or change without affecting later calls.
func Tools() []*mcp.Tool {
	tools := frozen()
	out := make([]*mcp.Tool, 0, len(tools))
	for _, t := range tools {
		destructive, openWorld := t.hints.destructive, t.hints.openWorld
		out = append(out, &mcp.Tool{
			Name:        t.name,
			Title:       t.title,
			Description: t.description,
			InputSchema: json.RawMessage(slices.Clone(t.schema)),
			Annotations: &mcp.ToolAnnotations{
				Title:           t.title,
				ReadOnlyHint:    t.hints.readOnly,
				DestructiveHint: &destructive,
				IdempotentHint:  t.hints.idempotent,
				OpenWorldHint:   &openWorld,
			},
		})
	}
	return out
}

// TaskSupportOptional is the execution.taskSupport of a tool that may be
// called as an MCP task (protocol 2025-11-25) or plainly.
const TaskSupportOptional = "optional"

// ToolExecution is the "execution" member of a tool definition (protocol
// 2025-11-25): whether the tool may be called as a task.
type ToolExecution struct {
	TaskSupport string `json:"taskSupport"`
}

// Execution returns the execution member of the named tool's definition
// for a server that supports tasks, or nil when the tool answers at once
// (taskSupport "forbidden", the protocol's default when the member is
// absent). Only prompt_send, whose turn may run for minutes, is
// TaskSupportOptional. A server without task support sends no execution
// member at all. Each call returns a fresh value.
func Execution(name string) *ToolExecution {
	ts := taskSupport[name]
	if ts == "" {
		return nil
	}
	return &ToolExecution{TaskSupport: ts}
}

// InputSchema returns a copy of the input schema of the named tool, as
// compact JSON with sorted keys, and whether the tool exists.
func InputSchema(name string) (json.RawMessage, bool) {
	t, ok := lookup(name)
	if !ok {
		return nil, false
	}
	return slices.Clone(t.schema), true
}
