-- Version 4: durable tasks (sessions.TaskStore). One row per task, the
-- commit point between the process that serves the client and the runner
-- that runs the turn: CancelTask and CommitTask are conditional updates
-- of the row. Times are Unix microseconds, ttl in microseconds;
-- expires_at = created_at + ttl, kept so that the sweeps use an index.
-- runner is '' (and runner_expires_at 0) until a runner claims the task.
CREATE TABLE tasks (
    id                TEXT    PRIMARY KEY,
    client_id         TEXT    NOT NULL,
    status            TEXT    NOT NULL CHECK (status IN ('working', 'completed', 'failed', 'cancelled')),
    status_message    TEXT    NOT NULL DEFAULT '',
    request           TEXT    NOT NULL,
    result            TEXT,
    progress          TEXT,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    ttl               INTEGER NOT NULL CHECK (ttl > 0),
    expires_at        INTEGER NOT NULL,
    committing        INTEGER NOT NULL DEFAULT 0 CHECK (committing IN (0, 1)),
    runner            TEXT    NOT NULL DEFAULT '',
    runner_expires_at INTEGER NOT NULL DEFAULT 0,
    CHECK (committing = 0 OR runner <> '')
);

-- ListTasks: a client's tasks in (created_at, id) order.
CREATE INDEX tasks_client ON tasks (client_id, created_at, id);
-- CreateTask's cap and FailAbandonedTasks: the working tasks only.
CREATE INDEX tasks_working ON tasks (client_id) WHERE status = 'working';
CREATE INDEX tasks_lapsed ON tasks (runner_expires_at, created_at) WHERE status = 'working';
-- PurgeExpiredTasks: terminal tasks by expiry.
CREATE INDEX tasks_expired ON tasks (expires_at) WHERE status <> 'working';
