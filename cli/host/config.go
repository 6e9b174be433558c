package host

import (
	"time"

	"github.com/openprogram/openprogram/authz"
	"github.com/openprogram/openprogram/runtime/provider"
)

// Config is everything the host is built from, typed. The `openprogram`
// command's loader produces it once from config.json, the environment and
// flags, and has validated every value; nothing the host builds checks it
// again.
type Config struct {
	// StateDir is the absolute state directory ($OPENPROGRAM_HOME or its
	// default). No speaker's tool ever writes it.
	StateDir string
	// StoreURL is the store: sqlite:<path> or postgres://... (config
	// store.url, OPENPROGRAM_DATABASE_URL, or SQLite in the state
	// directory).
	StoreURL string
	// Model configures the model provider (config model.*). Version is
	// filled in from [Options.Version].
	Model provider.Config
	// Agent configures the turn loop (config agent.*, model.context_tokens,
	// model.turn_timeout).
	Agent AgentConfig
	// MCPServer configures what MCP clients reach (config mcp_server.*).
	MCPServer MCPServerConfig
	// Tools configures the gate (config tools.*).
	Tools ToolsConfig
	// Audit configures the audit log (config audit.*).
	Audit AuditConfig
	// Telemetry configures OpenTelemetry export (config telemetry.*; the
	// OTEL_* variables win).
	Telemetry TelemetryConfig
}

// AuditConfig configures the audit log.
type AuditConfig struct {
	// LogFailures is audit.on_failure "log": an MCP request whose audit
	// record cannot be written runs anyway and the failure is logged. The
	// default (false, "refuse") refuses it before any side effect.
	LogFailures bool
}

// AgentConfig configures the turn loop.
type AgentConfig struct {
	// SystemPrompt is agent.system_prompt ("": the runtime's default).
	SystemPrompt string
	// WorkDirs are agent.work_dirs: absolute directories the file tools are
	// confined to. Empty: MCP clients' turns cannot write; the owner's
	// console uses the directory it was started in ([OwnerOptions.WorkDir]).
	WorkDirs []string
	// MaxSteps is agent.max_steps (0: the runtime's default).
	MaxSteps int
	// ContextTokens is model.context_tokens (0: send the whole session).
	ContextTokens int
	// TurnTimeout is model.turn_timeout (0: no limit).
	TurnTimeout time.Duration
}

// MCPServerConfig configures the MCP surface.
type MCPServerConfig struct {
	// ExposedTools is mcp_server.exposed_tools, the allowlist of runtime
	// tools an MCP client may discover and call, in order. Empty exposes
	// none.
	ExposedTools []string
	// Tasks configures durable MCP tasks (config mcp_server.tasks.*).
	Tasks TasksConfig
}

// TasksConfig configures durable MCP tasks: a task-augmented prompt_send
// runs in a detached runner process ([Host.RunTask]) that outlives the
// connection that started it.
type TasksConfig struct {
	// Enabled is mcp_server.tasks.enabled: `mcp serve` offers tasks.
	Enabled bool
	// MaxWorking is mcp_server.tasks.max_working: the most working tasks
	// of one client identity, and the most live runner processes of its
	// tasks.
	MaxWorking int
	// MaxRunners is mcp_server.tasks.max_runners: the most live runner
	// processes of the state directory, all clients together (0:
	// [DefaultTaskMaxRunners]).
	MaxRunners int
	// DefaultTTL is mcp_server.tasks.default_ttl, how long a task is kept
	// when its client asks for no ttl; at most MaxTTL.
	DefaultTTL time.Duration
	// MaxTTL is mcp_server.tasks.max_ttl, the longest ttl a client gets.
	MaxTTL time.Duration
}

// ToolsConfig configures the gate.
type ToolsConfig struct {
	// PermissionRules is tools.permission_rules, parsed and checked once
	// (authz.ParseRules).
	PermissionRules authz.Rules
}
