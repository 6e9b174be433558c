package mcpserver

// The records the MCP server itself writes, one payload type per record
// type, each written from one place, through the client's line
// (conversation.Line.Record; origin the client's speaker id, "mcp/<client
// id>"). A turn's and a tool call's records are the conversation's.

// ServerStartPayload is the payload of [AuditServerStart].
type ServerStartPayload struct {
	ClientID string `json:"client_id"`
	Version  string `json:"version"`
}

// ServerStopPayload is the payload of [AuditServerStop]; Reason is "eof",
// "cancelled" or "error".
type ServerStopPayload struct {
	ClientID string `json:"client_id"`
	Reason   string `json:"reason"`
}

// TaskCreatedPayload is the payload of [AuditTaskCreated]: the task, the
// request that created it and the ttl it was given, in milliseconds.
type TaskCreatedPayload struct {
	TaskID    string `json:"task_id"`
	RequestID any    `json:"request_id"`
	ClientID  string `json:"client_id"`
	TTLMs     int64  `json:"ttl_ms"`
}

// TaskCancelledPayload is the payload of [AuditTaskCancelled].
type TaskCancelledPayload struct {
	TaskID    string `json:"task_id"`
	RequestID any    `json:"request_id"` // the tasks/cancel request's id
	ClientID  string `json:"client_id"`
}

// TaskFinishedPayload is the payload of [AuditTaskFinished]; Status is the
// task's terminal status.
type TaskFinishedPayload struct {
	TaskID   string `json:"task_id"`
	ClientID string `json:"client_id"`
	Status   string `json:"status"`
}
