package sessions

// Every audit record type OpenProgram writes, in one list: a reader finds
// here what can appear in the log, and each writer names its type from
// here. The payload of each is a typed struct beside the code that writes
// it (mcpserver for the MCP records, the openprogram command for the
// owner's and the operator's). Payloads never hold prompt text, message
// content, tool arguments or the token.
const (
	// AuditServerStart: an `mcp serve` connection began.
	AuditServerStart = "mcp.server.start"
	// AuditServerStop: it ended (every start has its stop).
	AuditServerStop = "mcp.server.stop"
	// AuditPromptRequested: a prompt_send arrived; written before anything
	// of it runs.
	AuditPromptRequested = "mcp.prompt.requested"
	// AuditToolRequested: a tool_call of an exposed tool arrived; written
	// before the gate and the tool run.
	AuditToolRequested = "mcp.tool.requested"
	// AuditToolDenied: the gate denied a tool call, of tool_call or inside
	// an MCP turn.
	AuditToolDenied = "mcp.tool.denied"
	// AuditPromptCompleted: a prompt_send turn ran to its end.
	AuditPromptCompleted = "mcp.prompt.completed"
	// AuditRequestCancelled: a prompt_send turn was cancelled before its
	// commit point.
	AuditRequestCancelled = "mcp.request.cancelled"
	// AuditTaskCreated: a task-augmented prompt_send created its durable
	// task (after its mcp.prompt.requested record, which carries the task
	// id too).
	AuditTaskCreated = "mcp.task.created"
	// AuditTaskCancelled: a client's tasks/cancel won the task's commit
	// point (the task is cancelled before the answer).
	AuditTaskCancelled = "mcp.task.cancelled"
	// AuditTaskFinished: a task reached its terminal status (completed,
	// failed or cancelled), written by the task's runner, or by the sweep
	// for a task whose runner was lost.
	AuditTaskFinished = "mcp.task.finished"
	// AuditTokenRotated: `openprogram mcp token rotate` replaced the token.
	AuditTokenRotated = "mcp.token.rotated"
	// AuditOwnerSessionCreated: `chat` or `prompt` made a session.
	AuditOwnerSessionCreated = "owner.session.created"
	// AuditOwnerApproval: the owner answered an approval in `chat`, or a
	// standing approval ("allow for this session", kept by the store per
	// session) answered one in `chat` or `prompt --session` (payload
	// standing: true; written by cli/host before the call runs).
	AuditOwnerApproval = "owner.approval"
	// AuditReanchored: `openprogram audit reanchor --yes` moved the audit
	// anchor after a deliberate restore.
	AuditReanchored = "audit.reanchored"
	// AuditKeyed: a log written before keyed audit was re-keyed (written by
	// the store itself).
	AuditKeyed = "audit.keyed"
	// AuditKeyAdded: a writer key was used for the first time (written by
	// the store, first in its writer chain): {key_id, public_key, label}.
	AuditKeyAdded = "audit.key.added"
	// AuditKeyRevoked: `openprogram audit keys revoke` revoked a writer key:
	// {key_id}.
	AuditKeyRevoked = "audit.key.revoked"
	// AuditWriters: migration 0006 closed the shared chain for writers with
	// keys of their own (written to the shared chain, under its key, by
	// the store that migrated): {shared_records}.
	AuditWriters = "audit.writers"
)
